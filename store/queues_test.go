package store

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestRecordInboundDuplicate(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	in := Inbound{Platform: "telegram", MessageID: "42", SessionKey: "k", SenderID: "u", SenderName: "Ann", Text: "hi"}
	id, dup, err := s.RecordInbound(ctx, in)
	if err != nil || dup || id == 0 {
		t.Fatalf("first RecordInbound = %d, %v, %v", id, dup, err)
	}
	id2, dup2, err := s.RecordInbound(ctx, in)
	if err != nil || !dup2 || id2 != id {
		t.Fatalf("redelivery = %d, %v, %v; want %d duplicate", id2, dup2, err, id)
	}
	other := in
	other.Platform = "discord"
	if _, dup, _ := s.RecordInbound(ctx, other); dup {
		t.Fatal("same message id on another platform was taken as a duplicate")
	}
	noID := Inbound{Platform: "api", SessionKey: "k", Text: "x"}
	for i := 0; i < 2; i++ {
		if _, dup, err := s.RecordInbound(ctx, noID); err != nil || dup {
			t.Fatalf("message without id #%d: dup=%v err=%v", i, dup, err)
		}
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM inbox"); n != 4 {
		t.Fatalf("inbox rows = %d, want 4", n)
	}
}

func TestInboundStates(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	var ids []int64
	for _, mid := range []string{"1", "2", "3"} {
		id, _, err := s.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: mid, SessionKey: "k", Text: mid})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := s.SetInboundState(ctx, ids[0], InboundDone); err != nil {
		t.Fatal(err)
	}
	if err := s.SetInboundState(ctx, ids[1], InboundProcessing); err != nil {
		t.Fatal(err)
	}
	pending, err := s.PendingInbound(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 2 || pending[0].ID != ids[1] || pending[0].State != InboundProcessing ||
		pending[1].MessageID != "3" || !pending[1].ReceivedAt.Equal(clock.Now()) {
		t.Fatalf("pending = %+v", pending)
	}
	if err := s.SetInboundState(ctx, ids[0], "bogus"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bogus state err = %v", err)
	}
	if err := s.SetInboundState(ctx, 999, InboundDone); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing id err = %v", err)
	}
}

// An offline reset drops what the lane had waiting, and only that.
func TestIgnorePendingInbound(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	record := func(key, mid, state string) int64 {
		t.Helper()
		id, _, err := s.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: mid, SessionKey: key, Text: mid})
		if err != nil {
			t.Fatal(err)
		}
		if state != InboundReceived {
			if err := s.SetInboundState(ctx, id, state); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	record("k", "1", InboundReceived)
	record("k", "2", InboundProcessing)
	record("k", "3", InboundDone)
	other := record("other", "4", InboundReceived)

	n, err := s.IgnorePendingInbound(ctx, "k")
	if err != nil || n != 2 {
		t.Fatalf("IgnorePendingInbound = %d, %v; want the 2 pending messages", n, err)
	}
	pending, err := s.PendingInbound(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].ID != other {
		t.Errorf("pending after the reset = %+v, want only the other lane's message", pending)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM inbox WHERE state = 'done'"); n != 1 {
		t.Errorf("done messages = %d, want the finished one left alone", n)
	}
	if n, err := s.IgnorePendingInbound(ctx, "k"); err != nil || n != 0 {
		t.Errorf("second IgnorePendingInbound = %d, %v; want 0", n, err)
	}
}

func TestCursors(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	if _, ok, err := s.Cursor(ctx, "telegram"); ok || err != nil {
		t.Fatalf("unset cursor ok=%v err=%v", ok, err)
	}
	for _, v := range []string{"100", "101"} {
		if err := s.SetCursor(ctx, "telegram", v); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok, err := s.Cursor(ctx, "telegram"); v != "101" || !ok || err != nil {
		t.Fatalf("cursor = %q %v %v", v, ok, err)
	}
}

func TestOutboxLifecycle(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	now := clock.Now()
	msg := func(key, text string) OutboxMessage {
		return OutboxMessage{SessionKey: key, Platform: "discord", ChatID: "c", Text: text, ReplyTo: "r1"}
	}
	a1, err := s.Enqueue(ctx, msg("a", "a1"))
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := s.Enqueue(ctx, msg("a", "a2"))
	b1, _ := s.Enqueue(ctx, msg("b", "b1"))
	later := msg("c", "later")
	later.NextAttemptAt = now.Add(time.Hour)
	if _, err := s.Enqueue(ctx, later); err != nil {
		t.Fatal(err)
	}
	assertDue(t, s, now, a1, a2, b1)

	// a1 fails once: a2 must wait behind it (lane order), b1 goes on.
	if err := s.MarkRetry(ctx, a1, now.Add(time.Minute), "429 slow down"); err != nil {
		t.Fatal(err)
	}
	assertDue(t, s, now, b1)
	if err := s.MarkSent(ctx, b1, "pm-b1"); err != nil {
		t.Fatal(err)
	}
	assertDue(t, s, now.Add(time.Minute), a1, a2)
	due, _ := s.DueOutbox(ctx, now.Add(time.Minute), 1)
	if len(due) != 1 || due[0].Attempts != 1 || due[0].LastError != "429 slow down" || due[0].ReplyTo != "r1" {
		t.Fatalf("retried message = %+v", due)
	}
	if err := s.MarkFailed(ctx, a1, "forbidden"); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSent(ctx, a2, "pm-a2"); err != nil {
		t.Fatal(err)
	}
	assertDue(t, s, now.Add(time.Minute))
	if err := s.MarkRetry(ctx, a1, now, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("MarkRetry on a failed message err = %v, want ErrNotFound", err)
	}
	if err := s.MarkSent(ctx, 999, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("MarkSent(missing) err = %v", err)
	}
	var state, pmid string
	if err := s.rq.QueryRowContext(context.Background(), "SELECT state, platform_message_id FROM outbox WHERE id = ?", a2).Scan(&state, &pmid); err != nil || state != OutboxSent || pmid != "pm-a2" {
		t.Fatalf("a2 = %s %s %v", state, pmid, err)
	}
	if _, err := s.Enqueue(ctx, OutboxMessage{Text: "no address"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Enqueue without address err = %v", err)
	}
}

func assertDue(t *testing.T, s *Store, now time.Time, want ...int64) {
	t.Helper()
	due, err := s.DueOutbox(context.Background(), now, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, m := range due {
		got = append(got, m.ID)
	}
	if len(got) != len(want) {
		t.Fatalf("due = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("due = %v, want %v", got, want)
		}
	}
}

func TestPendingInboundKeepsAttachments(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	want := []Attachment{
		{Path: "/state/files/l/m/photo.jpg", Name: "photo.jpg", MIME: "image/jpeg", Size: 3, IsImage: true},
		{Path: "/state/files/l/m/notes.txt", Name: "notes.txt", MIME: "text/plain; charset=utf-8", Size: 5},
	}
	if _, _, err := s.RecordInbound(ctx, Inbound{Platform: "api", MessageID: "1", SessionKey: "k", Attachments: want}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.RecordInbound(ctx, Inbound{Platform: "api", MessageID: "2", SessionKey: "k", Text: "plain"}); err != nil {
		t.Fatal(err)
	}
	pending, err := s.PendingInbound(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 2 || !reflect.DeepEqual(pending[0].Attachments, want) || pending[1].Attachments != nil {
		t.Fatalf("pending = %+v, want the first with %+v", pending, want)
	}
}
