package processtest

import (
	"runtime"
	"testing"
)

// skipRecorder notes a skip instead of ending the real test.
type skipRecorder struct {
	testing.TB
	skipped string
}

func (r *skipRecorder) Helper() {}
func (r *skipRecorder) Skipf(format string, args ...any) {
	r.skipped = format
	runtime.Goexit()
}

func TestSkipWhenShortFollowsTheShortFlag(t *testing.T) {
	rec := &skipRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		SkipWhenShort(rec, "runs nothing")
	}()
	<-done
	if skipped := rec.skipped != ""; skipped != testing.Short() {
		t.Errorf("skipped = %v under -short = %v", skipped, testing.Short())
	}
}
