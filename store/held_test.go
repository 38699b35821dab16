package store

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

func TestHeldOutboxRows(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	now := clock.Now()
	enqueue := func(key, text string) int64 {
		t.Helper()
		id, err := s.Enqueue(ctx, OutboxMessage{SessionKey: key, Platform: "api", ChatID: key, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a1, a2, b1 := enqueue("a", "a1"), enqueue("a", "a2"), enqueue("b", "b1")

	// A held row is not due and does not hold back its lane's later rows.
	if err := s.HoldOutbox(ctx, a1); err != nil {
		t.Fatal(err)
	}
	assertDue(t, s, now, a2, b1)
	// A held row behind a retry waiting for later does not count either.
	if err := s.HoldOutbox(ctx, b1); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRetry(ctx, a2, now.Add(time.Hour), "later"); err != nil {
		t.Fatal(err)
	}
	assertDue(t, s, now)

	if n, err := s.UnholdLane(ctx, "a"); err != nil || n != 1 {
		t.Fatalf("UnholdLane(a) = %d, %v; want 1", n, err)
	}
	assertDue(t, s, now, a1)
	if n, err := s.UnholdAll(ctx); err != nil || n != 1 {
		t.Fatalf("UnholdAll = %d, %v; want 1 (b1)", n, err)
	}
	assertDue(t, s, now, a1, b1)

	// Holding a row already reported sent changes nothing.
	if err := s.MarkSent(ctx, b1, "pm"); err != nil {
		t.Fatal(err)
	}
	if err := s.HoldOutbox(ctx, b1); err != nil {
		t.Fatalf("HoldOutbox(sent row) = %v, want no error", err)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM outbox WHERE id = ? AND state = 'sent' AND held = 0", b1); n != 1 {
		t.Errorf("sent row was changed by HoldOutbox")
	}
}

func TestRecordAnswerAndExchange(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	const key = "v1:api:demo"
	if _, _, err := s.RecordInbound(ctx, Inbound{Platform: "api", MessageID: "m1", SessionKey: key, SenderID: "ann", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exchange(ctx, "api", "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Exchange(missing) err = %v, want ErrNotFound", err)
	}
	x, err := s.Exchange(ctx, "api", "m1")
	if err != nil || x.SessionKey != key || x.Text != "hi" || x.SenderID != "ann" || x.State != InboundReceived ||
		x.Answer != nil || x.AnswerPending {
		t.Fatalf("Exchange before the answer = %+v, %v", x, err)
	}
	reply, _ := s.Enqueue(ctx, OutboxMessage{SessionKey: key, Platform: "api", ChatID: "demo", Text: "re", ReplyTo: "m1"})
	if x, _ = s.Exchange(ctx, "api", "m1"); !x.AnswerPending {
		t.Errorf("Exchange with a pending reply row: AnswerPending false")
	}

	first := []byte(`{"reply":"re"}`)
	if got, err := s.RecordAnswer(ctx, key, "m1", first); err != nil || !bytes.Equal(got, first) {
		t.Fatalf("RecordAnswer = %s, %v", got, err)
	}
	if got, _ := s.RecordAnswer(ctx, key, "m1", []byte(`{"other":1}`)); !bytes.Equal(got, first) {
		t.Errorf("second RecordAnswer returned %s, want the first body kept", got)
	}
	if err := s.MarkSent(ctx, reply, "pm"); err != nil {
		t.Fatal(err)
	}
	if x, _ = s.Exchange(ctx, "api", "m1"); !bytes.Equal(x.Answer, first) || x.AnswerPending {
		t.Errorf("Exchange after the answer = %+v", x)
	}
	if _, err := s.RecordAnswer(ctx, "", "m1", first); !errors.Is(err, ErrInvalid) {
		t.Errorf("RecordAnswer without a lane err = %v, want ErrInvalid", err)
	}
}

// A lane nobody reads holds at most MaxHeldPerLane rows: the oldest give
// way, marked failed, and other lanes are not touched.
func TestHeldRowsAreBoundedPerLane(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	hold := func(key string) int64 {
		t.Helper()
		id, err := s.Enqueue(ctx, OutboxMessage{SessionKey: key, Platform: "api", ChatID: key, Text: "n"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.HoldOutbox(ctx, id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	other := hold("b")
	first := hold("a")
	for range MaxHeldPerLane {
		hold("a")
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM outbox WHERE session_key = 'a' AND state = 'pending' AND held = 1"); n != MaxHeldPerLane {
		t.Errorf("lane a holds %d rows, want %d", n, MaxHeldPerLane)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM outbox WHERE id = ? AND state = 'failed'", first); n != 1 {
		t.Error("the oldest held row of lane a was not the one dropped")
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM outbox WHERE id = ? AND state = 'pending' AND held = 1", other); n != 1 {
		t.Error("lane b's held row was touched")
	}
}
