package codex

import (
	"testing"

	"github.com/gatewayd/gatewayd/config"
)

// A zero Options times out as a daemon whose operator set no codex.*
// timeout does.
func TestZeroOptionsTakeTheConfigDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	for _, tt := range []struct {
		name      string
		got, want any
	}{
		{"StartTimeout", o.StartTimeout, config.DefaultStartTimeout},
		{"ResumeTimeout", o.ResumeTimeout, config.DefaultResumeTimeout},
		{"TurnTimeout", o.TurnTimeout, config.DefaultTurnTimeout},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}
