package store

import (
	"context"
	"errors"
	"testing"
)

// TestCommitTurnFilesBeforeReply: the files of a turn are committed with
// it, before its reply, and come back from DueOutbox whole; a second
// commit of the same turn adds none.
func TestCommitTurnFilesBeforeReply(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	ct := turn(l, "turn-1", "send it", "here it is")
	ct.UserMessageID = "m1"
	ct.Reply = &OutboxMessage{Text: "here it is", ReplyTo: "m1"}
	ct.Files = []OutboxMessage{{Text: "the report", ReplyTo: "m1", FilePath: "/state/files/a/out/report.pdf",
		FileName: "report.pdf", FileMIME: "application/pdf", FileSize: 1234}}
	if _, err := s.CommitTurn(ctx, ct); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitTurn(ctx, ct); err != nil {
		t.Fatal(err)
	}
	due, err := s.DueOutbox(ctx, clock.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 2 {
		t.Fatalf("due rows = %d, want the file and the reply", len(due))
	}
	f, r := due[0], due[1]
	if f.OutKind != OutboxFile || f.FilePath != "/state/files/a/out/report.pdf" || f.FileName != "report.pdf" ||
		f.FileMIME != "application/pdf" || f.FileSize != 1234 || f.Text != "the report" {
		t.Errorf("file row = %+v", f)
	}
	if f.Platform != l.Platform || f.ChatID != l.ChatID || f.TurnID != "turn-1" || f.ReplyTo != "m1" {
		t.Errorf("file row address/turn = %+v", f)
	}
	if r.OutKind != OutboxReply || r.Text != "here it is" {
		t.Errorf("reply row = %+v", r)
	}
}

func TestEnqueueFileNeedsAPath(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	l := mustEnsure(t, s, "a")
	_, err := s.Enqueue(context.Background(), OutboxMessage{SessionKey: l.SessionKey, Platform: l.Platform, OutKind: OutboxFile})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Enqueue(file without path) = %v, want ErrInvalid", err)
	}
}
