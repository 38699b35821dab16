package store

import (
	"context"
	"testing"
)

func TestCommitTurnRecordsSteeredMessagesOnce(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	var ids []int64
	for _, m := range []string{"m1", "m2", "m3"} {
		id, _, err := s.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: m, SessionKey: l.SessionKey, Text: m})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	ct := turn(l, "turn-1", "m1", "answer to all")
	ct.InboundID, ct.UserMessageID = ids[0], "m1"
	ct.Steered = []SteeredInput{{Text: "m2", MessageID: "m2", InboundID: ids[1]}, {Text: "m3", MessageID: "m3", InboundID: ids[2]}}
	for i := range 2 { // the second commit is a duplicate and adds nothing
		if _, err := s.CommitTurn(ctx, ct); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	msgs, err := s.Transcript(ctx, l.SessionKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ role, text, turn string }{
		{"user", "m1", "turn-1"}, {"user", "m2", "turn-1#steer1"}, {"user", "m3", "turn-1#steer2"},
		{"assistant", "answer to all", "turn-1"},
	}
	if len(msgs) != len(want) {
		t.Fatalf("transcript %+v, want %d rows", msgs, len(want))
	}
	for i, w := range want {
		if msgs[i].Role != w.role || msgs[i].Text != w.text || msgs[i].TurnID != w.turn {
			t.Errorf("row %d = %s %q %s, want %s %q %s", i, msgs[i].Role, msgs[i].Text, msgs[i].TurnID, w.role, w.text, w.turn)
		}
	}
	if p, _ := s.PendingInbound(ctx); len(p) != 0 {
		t.Errorf("pending inbound %+v, want all done", p)
	}
}
