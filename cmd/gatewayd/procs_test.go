package main

import (
	"runtime"
	"testing"

	"go.uber.org/zap"
)

func TestDaemonProcs(t *testing.T) {
	tests := []struct{ cpus, want int }{
		{cpus: 1, want: 1}, {cpus: 2, want: 1}, {cpus: 8, want: 1}, {cpus: 9, want: 2}, {cpus: 16, want: 2}, {cpus: 64, want: 8},
	}
	for _, tt := range tests {
		if got := daemonProcs(tt.cpus); got != tt.want {
			t.Errorf("daemonProcs(%d) = %d, want %d", tt.cpus, got, tt.want)
		}
	}
}

// The daemon runs on daemonProcs threads and gives the caller its setting
// back; an operator's GOMAXPROCS is left as the runtime applied it.
func TestLimitProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	runtime.GOMAXPROCS(4)
	t.Setenv("GOMAXPROCS", "")
	restore := limitProcs(zap.NewNop())
	if got := runtime.GOMAXPROCS(0); got != daemonProcs(4) {
		t.Errorf("GOMAXPROCS during the run = %d, want %d", got, daemonProcs(4))
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("GOMAXPROCS after the run = %d, want 4 again", got)
	}

	t.Setenv("GOMAXPROCS", "4")
	restore = limitProcs(zap.NewNop())
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("GOMAXPROCS with the variable set = %d, want 4 (the operator's)", got)
	}
	restore()
}
