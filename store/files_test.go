package store

import (
	"context"
	"errors"
	"fmt"
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

// TestPendingOutboxFiles: the lane's file rows still to be delivered, held
// ones included, name their copies; delivered, failed, other lanes' and
// rows without a file do not.
func TestPendingOutboxFiles(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	a, b := mustEnsure(t, s, "a"), mustEnsure(t, s, "b")
	file := func(l Lane, path string) int64 {
		t.Helper()
		id, err := s.Enqueue(ctx, OutboxMessage{SessionKey: l.SessionKey, Platform: l.Platform, ChatID: l.ChatID,
			OutKind: OutboxFile, FilePath: path, FileName: "x"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	pending := file(a, "/out/pending")
	held := file(a, "/out/held")
	sent := file(a, "/out/sent")
	failed := file(a, "/out/failed")
	file(b, "/out/other-lane")
	if _, err := s.Enqueue(ctx, OutboxMessage{SessionKey: a.SessionKey, Platform: a.Platform, Text: "a reply"}); err != nil {
		t.Fatal(err)
	}
	if err := s.HoldOutbox(ctx, held); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSent(ctx, sent, "p1"); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkFailed(ctx, failed, "gone"); err != nil {
		t.Fatal(err)
	}
	got, err := s.PendingOutboxFiles(ctx, a.SessionKey)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[/out/pending /out/held]" {
		t.Fatalf("PendingOutboxFiles = %q, want the pending and the held row's files (ids %d, %d)", got, pending, held)
	}
}
