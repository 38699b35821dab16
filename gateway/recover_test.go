package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/store"
)

func TestRestartRecovery(t *testing.T) {
	tests := []struct {
		name      string
		autoRetry bool
	}{
		{name: "notice and /retry"},
		{name: "auto retry once", autoRetry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.AutoRetryCutOff = tt.autoRetry })
			ctx := context.Background()
			// State left by a crash: lane a's turn was running (journaled);
			// lane b's message was recorded but never processed.
			la, _ := h.st.EnsureLane(ctx, laneKey(apiAddr("a")))
			h.st.EnsureLane(ctx, laneKey(apiAddr("b")))
			cut, _, _ := h.st.RecordInbound(ctx, store.Inbound{Platform: "test", MessageID: "a1", SessionKey: laneA, Text: "cut job"})
			h.st.JournalTurn(ctx, store.JournalEntry{SessionKey: laneA, Generation: la.Generation, InboundID: cut, Text: "cut job"})
			h.st.RecordInbound(ctx, store.Inbound{Platform: "test", MessageID: "b1", SessionKey: "v1:test:b", Text: "pending job"})
			h.start(t)
			if o := h.p.replyTo(t, "b1"); o.Text != "re: pending job" {
				t.Errorf("pending message answered %q", o.Text)
			}
			if tt.autoRetry {
				waitFor(t, "auto retry", func() bool { u, _ := h.st.rows(laneA); return u == 1 })
			} else {
				h.send(t, "a", "r1", "/retry")
				if o := h.p.replyTo(t, "r1"); o.Text != "re: cut job" {
					t.Errorf("/retry answered %q", o.Text)
				}
			}
			h.stop()
			var notices []string
			for len(h.p.out) > 0 {
				if o := <-h.p.out; strings.Contains(o.Text, "cut off") {
					notices = append(notices, o.Text)
				}
			}
			if len(notices) > 1 {
				t.Errorf("cut-off notices %q, want at most one (one was read above)", notices)
			}
			if _, _, turns := h.cx.snapshot(); len(turns) != 2 {
				t.Errorf("codex turns %v, want the pending job and one rerun", turns)
			}
			if j, _ := h.st.Journal(ctx); len(j) != 0 {
				t.Errorf("journal not cleared: %+v", j)
			}
		})
	}
}
