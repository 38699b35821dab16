package store

import (
	"context"
	"errors"
	"testing"
)

// A message recorded with its lane creates the lane and the row in one
// commit; a second message of the lane marks it active in one commit too.
func TestRecordInboundEnsuresItsLaneInOneCommit(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	k := testLaneKey("inbound")
	for i, msg := range []string{"m1", "m2"} {
		before := s.Commits()
		id, dup, err := s.RecordInbound(ctx, Inbound{Platform: k.Platform, MessageID: msg, SessionKey: k.SessionKey,
			Text: "hi", Lane: k})
		if err != nil || dup || id == 0 {
			t.Fatalf("RecordInbound(%s) = %d, %v, %v", msg, id, dup, err)
		}
		if got := s.Commits() - before; got != 1 {
			t.Errorf("message %d: %d commits, want 1", i+1, got)
		}
		l, err := s.Lane(ctx, k.SessionKey)
		if err != nil {
			t.Fatalf("the lane was not created with message %d: %v", i+1, err)
		}
		if !l.LastActiveAt.Equal(clock.Now()) {
			t.Errorf("message %d: lane active at %v, want %v", i+1, l.LastActiveAt, clock.Now())
		}
		clock.Advance(1e9)
	}
}

// A lane that is not the message's is refused before anything is written.
func TestRecordInboundRefusesAnotherLane(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	k := testLaneKey("other")
	_, _, err := s.RecordInbound(ctx, Inbound{Platform: k.Platform, MessageID: "m1", SessionKey: k.SessionKey + "x",
		Text: "hi", Lane: k})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if _, err := s.Lane(ctx, k.SessionKey); !errors.Is(err, ErrNotFound) {
		t.Errorf("lane after a refused message: %v, want ErrNotFound", err)
	}
	if rows, err := s.PendingInbound(ctx); err != nil || len(rows) != 0 {
		t.Errorf("pending inbound %v, %v: want none", rows, err)
	}
}

// The first message that can name its lane does, in the same commit; a
// later one keeps the title and the lane's other meta.
func TestRecordInboundNamesItsLaneOnce(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	k := testLaneKey("titled")
	record := func(msg, title string) {
		t.Helper()
		before := s.Commits()
		if _, _, err := s.RecordInbound(ctx, Inbound{Platform: k.Platform, MessageID: msg, SessionKey: k.SessionKey,
			Text: "hi", Lane: k, LaneTitle: title}); err != nil {
			t.Fatal(err)
		}
		if got := s.Commits() - before; got != 1 {
			t.Errorf("message %s: %d commits, want 1", msg, got)
		}
	}
	record("m1", "")
	if err := s.SetMeta(ctx, k.SessionKey, map[string]string{"note": "kept"}); err != nil {
		t.Fatal(err)
	}
	record("m2", "Deploy the site")
	record("m3", "Something else")
	l, err := s.Lane(ctx, k.SessionKey)
	if err != nil {
		t.Fatal(err)
	}
	if l.Meta["title"] != "Deploy the site" || l.Meta["note"] != "kept" {
		t.Errorf("meta = %v, want the first title and the note kept", l.Meta)
	}
}
