package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestRoomLinesAreKeptOnceAndTakenOnce: a redelivered line is kept once,
// a take returns the newest lines oldest first and forgets the lane's
// lines (not another lane's), and a lane keeps at most roomKeep.
func TestRoomLinesAreKeptOnceAndTakenOnce(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	add := func(key, id, text string) {
		t.Helper()
		if err := s.AddRoomLine(ctx, RoomLine{SessionKey: key, Platform: "telegram", MessageID: id, Sender: "Ben", Text: text, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	add("a", "1", "one")
	add("a", "2", "two")
	add("a", "2", "two again") // a redelivery
	add("a", "3", "three")
	add("b", "4", "other lane")
	lines, err := s.TakeRoomLines(ctx, "a", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0].Text != "two" || lines[1].Text != "three" || lines[0].Sender != "Ben" || !lines[1].At.Equal(at) {
		t.Fatalf("took %+v, want two then three", lines)
	}
	if again, _ := s.TakeRoomLines(ctx, "a", 10); len(again) != 0 {
		t.Fatalf("a second take returned %+v, want nothing", again)
	}
	if other, _ := s.TakeRoomLines(ctx, "b", 10); len(other) != 1 || other[0].Text != "other lane" {
		t.Fatalf("the other lane's lines: %+v", other)
	}
	for i := range roomKeep + 5 {
		add("c", fmt.Sprint(100+i), fmt.Sprint("line ", i))
	}
	all, _ := s.TakeRoomLines(ctx, "c", 0)
	if len(all) != roomKeep || all[0].Text != "line 5" {
		t.Fatalf("kept %d lines starting %q, want the newest %d", len(all), all[0].Text, roomKeep)
	}
	if err := s.AddRoomLine(ctx, RoomLine{SessionKey: "c"}); err == nil {
		t.Error("a line without its message id was kept")
	}
}

// TestSetInboundTextRewritesOnlyAWaitingMessage: an edit of a message
// still waiting changes what a restart runs; one already done is refused.
func TestSetInboundTextRewritesOnlyAWaitingMessage(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	id, _, err := s.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: "m1", SessionKey: l.SessionKey, Text: "frist"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetInboundText(ctx, id, "first"); err != nil {
		t.Fatalf("SetInboundText of a waiting message: %v", err)
	}
	rows, err := s.PendingInbound(ctx)
	if err != nil || len(rows) != 1 || rows[0].Text != "first" {
		t.Fatalf("pending after the edit: %+v, %v", rows, err)
	}
	if err := s.SetInboundState(ctx, id, InboundDone); err != nil {
		t.Fatal(err)
	}
	if err := s.SetInboundText(ctx, id, "too late"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetInboundText of a done message: %v, want ErrNotFound", err)
	}
}
