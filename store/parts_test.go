package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// dueRow returns the due row id, failing if it is not due.
func dueRow(t *testing.T, s *Store, id int64) OutboxMessage {
	t.Helper()
	due, err := s.DueOutbox(context.Background(), s.now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range due {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("outbox row %d is not due (due: %+v)", id, due)
	return OutboxMessage{}
}

func TestRecordPart(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	row, err := s.Enqueue(ctx, OutboxMessage{SessionKey: "a", Platform: "telegram", ChatID: "1", Text: "long"})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := s.Enqueue(ctx, OutboxMessage{SessionKey: "b", Platform: "telegram", ChatID: "2", Text: "other"})
	steps := []struct {
		name    string
		part    int
		id      string
		wantErr error
		want    []string
	}{
		{name: "first part", part: 0, id: "1:10", want: []string{"1:10"}},
		{name: "second part", part: 1, id: "1:11", want: []string{"1:10", "1:11"}},
		{name: "a part recorded again keeps its first id", part: 1, id: "1:99", want: []string{"1:10", "1:11"}},
		{name: "a gap is refused", part: 3, id: "1:13", wantErr: ErrInvalid, want: []string{"1:10", "1:11"}},
		{name: "a negative part is refused", part: -1, id: "x", wantErr: ErrInvalid, want: []string{"1:10", "1:11"}},
		{name: "third part", part: 2, id: "1:12", want: []string{"1:10", "1:11", "1:12"}},
	}
	for _, st := range steps {
		err := s.RecordPart(ctx, row, st.part, st.id)
		if !errors.Is(err, st.wantErr) || (st.wantErr == nil && err != nil) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.wantErr)
		}
		if got := dueRow(t, s, row).SentParts; fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Fatalf("%s: SentParts = %v, want %v", st.name, got, st.want)
		}
	}
	if got := dueRow(t, s, other).SentParts; got != nil {
		t.Fatalf("another row's SentParts = %v, want none", got)
	}
	if err := s.RecordPart(ctx, 999, 0, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("RecordPart on a missing row err = %v, want ErrNotFound", err)
	}
}

// The parts survive a restart: a new process sees what the last one sent.
func TestRecordedPartsSurviveReopen(t *testing.T) {
	t.Parallel()
	path := testDBPath(t)
	ctx := context.Background()
	s := openAt(t, path, Options{})
	row, err := s.Enqueue(ctx, OutboxMessage{SessionKey: "a", Platform: "discord", ChatID: "c", Text: "long"})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"m0", "m1"} {
		if err := s.RecordPart(ctx, row, i, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, Options{})
	if got := dueRow(t, s, row).SentParts; fmt.Sprint(got) != "[m0 m1]" {
		t.Fatalf("SentParts after reopen = %v, want [m0 m1]", got)
	}
}

func TestOutboxKindAndTurn(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "lane")
	tests := []struct {
		name  string
		enq   func() (int64, error)
		want  OutboxMessage
		error error
	}{
		{name: "a notice by default", enq: func() (int64, error) {
			return s.Enqueue(ctx, OutboxMessage{SessionKey: "n", Platform: "telegram", Text: "Queued"})
		}, want: OutboxMessage{OutKind: OutboxNotice}},
		{name: "a committed turn's reply carries its turn", enq: func() (int64, error) {
			tt := turn(l, "turn-1", "hi", "hello")
			tt.ThreadID, tt.Status, tt.Reply = "th-1", "completed", &OutboxMessage{Text: "hello", ReplyTo: "m1"}
			res, err := s.CommitTurn(ctx, tt)
			return res.OutboxID, err
		}, want: OutboxMessage{OutKind: OutboxReply, ThreadID: "th-1", TurnID: "turn-1", TurnStatus: "completed"}},
		{name: "an unknown kind is refused", enq: func() (int64, error) {
			return s.Enqueue(ctx, OutboxMessage{SessionKey: "n", Platform: "telegram", Text: "x", OutKind: "preview"})
		}, error: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := tt.enq()
			if tt.error != nil {
				if !errors.Is(err, tt.error) {
					t.Fatalf("err = %v, want %v", err, tt.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := dueRow(t, s, id)
			if got.OutKind != tt.want.OutKind || got.ThreadID != tt.want.ThreadID || got.TurnID != tt.want.TurnID ||
				got.TurnStatus != tt.want.TurnStatus {
				t.Fatalf("row = kind %q turn %q/%q/%q, want %+v", got.OutKind, got.ThreadID, got.TurnID, got.TurnStatus, tt.want)
			}
		})
	}
}

func TestLaneKeepsItsUser(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	k := LaneKey{SessionKey: "v1:discord:channel:5:user:42", Platform: "discord", Kind: "channel", ChatID: "5", UserID: "42"}
	if _, err := s.EnsureLane(ctx, k); err != nil {
		t.Fatal(err)
	}
	l, err := s.Lane(ctx, k.SessionKey)
	if err != nil || l.UserID != "42" {
		t.Fatalf("lane user = %q (%v), want 42", l.UserID, err)
	}
	res, err := s.CommitTurn(ctx, CompletedTurn{SessionKey: l.SessionKey, Generation: l.Generation, TurnID: "t1",
		UserText: "hi", AssistantText: "ok", Reply: &OutboxMessage{Text: "ok"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := dueRow(t, s, res.OutboxID); got.UserID != "42" {
		t.Fatalf("reply addressed from the lane has user %q, want 42", got.UserID)
	}
}

// MarkSentWithPart records the last part and the sent mark in one commit;
// when the part cannot be recorded, the row is not marked sent either.
func TestMarkSentWithPart(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	row, err := s.Enqueue(ctx, OutboxMessage{SessionKey: "a", Platform: "telegram", ChatID: "1", Text: "two parts"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordPart(ctx, row, 0, "1:10"); err != nil {
		t.Fatal(err)
	}
	gap, _ := s.Enqueue(ctx, OutboxMessage{SessionKey: "b", Platform: "telegram", ChatID: "2", Text: "gap"})
	if err := s.MarkSentWithPart(ctx, gap, 1, "2:11"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("MarkSentWithPart after a gap err = %v, want ErrInvalid", err)
	}
	if got := dueRow(t, s, gap).SentParts; got != nil {
		t.Fatalf("refused row's SentParts = %v, want none (nothing applied)", got)
	}
	commits := s.Commits()
	if err := s.MarkSentWithPart(ctx, row, 1, "1:11"); err != nil {
		t.Fatal(err)
	}
	if got := s.Commits() - commits; got != 1 {
		t.Errorf("commits = %d, want 1", got)
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM outbox WHERE id = ? AND state = 'sent' AND platform_message_id = '1:11'`, row); n != 1 {
		t.Errorf("row not marked sent with the last part's id")
	}
	if n := countRows(t, s, `SELECT COUNT(*) FROM outbox_parts WHERE outbox_id = ?`, row); n != 2 {
		t.Errorf("%d parts recorded, want 2", n)
	}
	if err := s.MarkSentWithPart(ctx, 999, 0, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("MarkSentWithPart on a missing row err = %v, want ErrNotFound", err)
	}
}

// Statements counts what a write costs the database: the one-commit sent
// mark with its last part is the two writes' statements less one
// transaction's BEGIN and COMMIT, and recording the next part is one
// statement (its gap check inside the INSERT).
func TestStatementsPerSentMark(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	a, _ := s.Enqueue(ctx, OutboxMessage{SessionKey: "a", Platform: "telegram", ChatID: "1", Text: "one part"})
	b, _ := s.Enqueue(ctx, OutboxMessage{SessionKey: "b", Platform: "telegram", ChatID: "2", Text: "one part"})
	cost := func(write func() error) int64 {
		t.Helper()
		before := s.Statements()
		if err := write(); err != nil {
			t.Fatal(err)
		}
		return s.Statements() - before
	}
	// The first lazy write after the durable Enqueue switches the write
	// connection to synchronous = NORMAL; the writes after it need not.
	apart := cost(func() error { return s.RecordPart(ctx, a, 0, "1:1") }) + cost(func() error { return s.MarkSent(ctx, a, "1:1") })
	together := cost(func() error { return s.MarkSentWithPart(ctx, b, 0, "2:1") })
	if want := 6 + syncSwitch(s); apart != want || together != 4 {
		t.Errorf("statements: record then mark %d, together %d; want %d ((PRAGMA;) BEGIN, INSERT, COMMIT; BEGIN, UPDATE, COMMIT) and 4", apart, together, want)
	}
}
