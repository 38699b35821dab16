package gateway_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestIntegrationAPIUsageLimitAnswersAfterReset: on the API lane, a
// message refused for the usage limit (real codex, fake model's 429) is
// not answered with the notice: its request waits through the ~2 s pause
// and gets the reply after the reset, with the notice among its notices.
func TestIntegrationAPIUsageLimitAnswersAfterReset(t *testing.T) {
	w := newWorld(t)
	in := w.start(t, gateway.Config{})
	// The reset is set when the first request arrives, not when the test
	// starts: a slow codex start-up must not let the first request come
	// after the reset and skip the limit the test is about.
	var (
		mu    sync.Mutex
		reset time.Time
	)
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if reset.IsZero() {
			reset = time.Now().Add(1500 * time.Millisecond).Truncate(time.Second).Add(time.Second)
		}
		if time.Now().Before(reset) {
			return codextest.UsageLimit(reset)
		}
		return codextest.DefaultReply(req)
	})
	out := in.ask(t, "limited", "hello after the limit")
	mu.Lock()
	defer mu.Unlock()
	if reset.IsZero() {
		t.Fatal("the model was never asked")
	}
	if time.Now().Before(reset) {
		t.Fatalf("answered before the reset at %v", reset)
	}
	if out.Reply != "ECHO: hello after the limit" || out.Status != "completed" {
		t.Errorf("answer = %q (status %q), want the reply after the reset", out.Reply, out.Status)
	}
	want := "Codex usage limit reached; I'll continue at " + reset.In(time.Local).Format("15:04 MST")
	told := 0
	for _, n := range out.Notices {
		if strings.Contains(n, "usage limit") {
			told++
			if !strings.HasPrefix(n, want) {
				t.Errorf("notice %q, want it to start %q", n, want)
			}
		}
	}
	if told != 1 {
		t.Errorf("notices %q, want the usage-limit notice once", out.Notices)
	}
}
