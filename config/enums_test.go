package config

import "testing"

// The Check functions give the message Load gives for the same value, so
// a package that checks a value from code reports it as the operator's
// key would be.
func TestCheckFunctionsMatchLoad(t *testing.T) {
	tests := []struct {
		name  string
		check func() error
		want  string // "" = valid
	}{
		{"busy modes", func() error { return firstErr(BusyModes, CheckBusyMode) }, ""},
		{"approval modes", func() error { return firstErr(ApprovalModes, CheckApprovals) }, ""},
		{"verbose modes", func() error { return firstErr(VerboseModes, CheckVerbose) }, ""},
		{"compact off", func() error { return CheckCompactAt(0) }, ""},
		{"compact 0.8", func() error { return CheckCompactAt(0.8) }, ""},
		{"unknown busy mode", func() error { return CheckBusyMode("drop") },
			`config: lanes.busy_mode: invalid value "drop" (one of queue, interrupt, steer)`},
		{"unknown approvals", func() error { return CheckApprovals("always") },
			`config: codex.approvals: invalid value "always" (one of never, chat)`},
		{"unknown verbose", func() error { return CheckVerbose("loud") },
			`config: lanes.verbose: invalid value "loud" (one of off, summary, full)`},
		{"compact one", func() error { return CheckCompactAt(1) },
			`config: lanes.compact_at: must be between 0 and 1 (exclusive), or 0 for off; got 1`},
		{"compact negative", func() error { return CheckCompactAt(-0.5) },
			`config: lanes.compact_at: must be between 0 and 1 (exclusive), or 0 for off; got -0.5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func firstErr(values []string, check func(string) error) error {
	for _, v := range values {
		if err := check(v); err != nil {
			return err
		}
	}
	return nil
}
