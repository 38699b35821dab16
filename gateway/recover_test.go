package gateway

import (
	"context"
	"fmt"
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
			want := map[string]string{"b1": "re: pending job"}
			if tt.autoRetry {
				// The rerun answers the cut-off message itself, so the
				// platform can thread it and the API can record it.
				want["a1"] = "re: cut job"
			}
			for len(want) > 0 { // the two lanes answer in either order
				o := h.p.next(t)
				if text, ok := want[o.InReplyTo]; ok && o.Kind != OutPreview {
					if o.Text != text {
						t.Errorf("%s answered %q, want %q", o.InReplyTo, o.Text, text)
					}
					delete(want, o.InReplyTo)
				}
			}
			if !tt.autoRetry {
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

// TestDoubleCrashTellsOnceAndRetryRunsCutOffText: after two starts in a
// row with no /retry between them, the lane was told once and /retry still
// reruns the cut-off message, not the message before it.
func TestDoubleCrashTellsOnceAndRetryRunsCutOffText(t *testing.T) {
	st := newFakeStore()
	ctx := context.Background()
	la, _ := st.EnsureLane(ctx, laneKey(apiAddr("a")))
	earlier := store.CompletedTurn{SessionKey: laneA, Generation: la.Generation, TurnID: "t0",
		UserText: "earlier job", AssistantText: "done", Status: statusCompleted}
	if _, err := st.CommitTurn(ctx, earlier); err != nil {
		t.Fatal(err)
	}
	cut, _, _ := st.RecordInbound(ctx, store.Inbound{Platform: "test", MessageID: "a1", SessionKey: laneA, Text: "cut job"})
	st.JournalTurn(ctx, store.JournalEntry{SessionKey: laneA, Generation: la.Generation, InboundID: cut, Text: "cut job"})

	first := newHarnessOn(t, st)
	first.start(t)
	if o := first.p.next(t); o.Text != CutOffNotice("cut job") {
		t.Fatalf("first start sent %q, want the cut-off notice", o.Text)
	}
	first.stop()

	second := newHarnessOn(t, st)
	second.start(t)
	second.send(t, "a", "r1", "/retry")
	if o := second.p.replyTo(t, "r1"); o.Text != "re: cut job" {
		t.Errorf("/retry after the second start answered %q, want the cut-off job rerun", o.Text)
	}
	second.stop()
	for len(second.p.out) > 0 {
		if o := <-second.p.out; o.Text == CutOffNotice("cut job") {
			t.Error("the second start told the lane about the cut-off turn again")
		}
	}
	if r, ok, _ := st.RetryTurn(ctx, laneA); ok {
		t.Errorf("turn to retry %+v still offered after /retry ran it", r)
	}
}

// TestRefusedMessageNeverRunsLater: a message answered "could not save"
// (the disk full once it was recorded: its thread's binding and the turn
// cannot be written) is never run after a restart; when even marking it
// refused fails, the answer does not ask the user to send it again, and it
// is answered once after the restart.
func TestRefusedMessageNeverRunsLater(t *testing.T) {
	full := fmt.Errorf("binding: %w", store.ErrDiskFull)
	tests := []struct {
		name        string
		failMarking bool
		wantReply   string
		wantRerun   bool
	}{
		{name: "refused and marked", wantReply: storeErrorNotice},
		{name: "marking failed too", failMarking: true, wantReply: storeStillPendingNotice, wantRerun: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newFakeStore()
			first := newHarnessOn(t, st)
			first.start(t)
			st.failOn("BindThread", full)
			st.failOn("CommitTurn", full)
			if tt.failMarking {
				st.failOn("SetInboundState", full)
			}
			first.send(t, "a", "m1", "build it")
			if o := first.p.replyTo(t, "m1"); o.Text != tt.wantReply {
				t.Errorf("answer %q, want %q", o.Text, tt.wantReply)
			}
			first.stop()
			for _, m := range []string{"BindThread", "CommitTurn", "SetInboundState"} {
				st.failOn(m, nil) // the disk has room again
			}

			second := newHarnessOn(t, st)
			second.start(t)
			second.send(t, "a", "m2", "next")
			second.p.replyTo(t, "m2")
			_, _, turns := second.cx.snapshot()
			rerun := len(turns) == 2
			if rerun != tt.wantRerun {
				t.Errorf("after the restart codex ran %v; rerun of the refused message = %v, want %v", turns, rerun, tt.wantRerun)
			}
		})
	}
}

// TestResetDuringTurnThenCrashNeverRunsIt: a crash after /new reset a lane
// whose turn was running must not run that turn's message in the new
// conversation at the next start (or the one after).
func TestResetDuringTurnThenCrashNeverRunsIt(t *testing.T) {
	st := newFakeStore()
	ctx := context.Background()
	la, _ := st.EnsureLane(ctx, laneKey(apiAddr("a")))
	cut, _, _ := st.RecordInbound(ctx, store.Inbound{Platform: "test", MessageID: "a1", SessionKey: laneA, Text: "old job"})
	st.SetInboundState(ctx, cut, store.InboundProcessing)
	st.JournalTurn(ctx, store.JournalEntry{SessionKey: laneA, Generation: la.Generation, InboundID: cut, Text: "old job"})
	if _, err := st.ResetLane(ctx, laneA, "/new"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // two starts in a row
		h := newHarnessOn(t, st)
		h.start(t)
		h.stop()
		if _, _, turns := h.cx.snapshot(); len(turns) != 0 {
			t.Fatalf("a start ran %v: the stale cut-off message must not run", turns)
		}
	}
	if s := st.inboundState(cut); s != store.InboundIgnored {
		t.Errorf("the reset turn's inbound is %q, want ignored", s)
	}
}
