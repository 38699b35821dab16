package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A refused message and its answer stay in the lane's conversation, in
// order between the turns, and a second refusal of the same row writes no
// second user row; the inbound row is closed. Rotation's last turn is the
// turn's, not the notice's.
func TestRefusedMessageAndNoticesStayInTheTranscript(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "refused")
	if _, err := s.CommitTurn(ctx, turn(l, "t1", "first question", "first answer")); err != nil {
		t.Fatal(err)
	}
	turnAt := clock.Now()
	clock.Advance(time.Minute)
	id, _, err := s.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: "m2", SessionKey: l.SessionKey,
		Text: "second question", ReceivedAt: clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	notice := OutboxMessage{SessionKey: l.SessionKey, Platform: "telegram", Kind: "topic", ChatID: "100",
		TopicID: "refused", Text: "Codex is not logged in", ReplyTo: "m2"}
	r := Refusal{InboundID: id, Text: "second question", MessageID: "m2", Notice: notice}
	for range 2 {
		if _, err := s.RefuseInbound(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM inbox WHERE id = ? AND state = 'failed'", id); n != 1 {
		t.Errorf("inbound row not failed")
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM outbox WHERE session_key = ?", l.SessionKey); n != 2 {
		t.Errorf("outbox rows = %d, want the two answers", n)
	}
	// An edit is not a new message of the conversation.
	edit := notice
	edit.EditID, edit.Text = "p1", "edited"
	if _, err := s.Enqueue(ctx, edit); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.TranscriptPage(ctx, l.SessionKey, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := len(msgs) - 1; i >= 0; i-- {
		got = append(got, msgs[i].Role+":"+msgs[i].Text)
	}
	want := "user:first question|assistant:first answer|user:second question|" +
		"notice:Codex is not logged in|notice:Codex is not logged in"
	if strings.Join(got, "|") != want {
		t.Errorf("conversation = %q\nwant %q", strings.Join(got, "|"), want)
	}
	if msgs[2].PlatformMessageID != "m2" || msgs[2].TurnID != "" {
		t.Errorf("refused row = %+v", msgs[2])
	}
	last, err := s.LastTurnAt(ctx, l.SessionKey)
	if err != nil {
		t.Fatal(err)
	}
	if !last.Equal(turnAt) {
		t.Errorf("LastTurnAt = %v, want the turn's %v (notices are no turns)", last, turnAt)
	}
}

// A lane with no turn has no last turn; a lane not in the store is an
// error; a notice for a lane the store does not know is only sent.
func TestLastTurnAtAndNoticeWithoutLane(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "quiet")
	if last, err := s.LastTurnAt(ctx, l.SessionKey); err != nil || !last.IsZero() {
		t.Errorf("LastTurnAt(no turns) = %v, %v", last, err)
	}
	if _, err := s.LastTurnAt(ctx, "v1:telegram:dm:404"); err == nil {
		t.Error("LastTurnAt of an unknown lane: no error")
	}
	if _, err := s.Enqueue(ctx, OutboxMessage{SessionKey: "v1:telegram:dm:404", Platform: "telegram", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM messages WHERE session_key = 'v1:telegram:dm:404'"); n != 0 {
		t.Errorf("%d transcript rows for a lane not in the store", n)
	}
}

// A notice told while a turn ran comes after the turn's message and before
// its answer once the turn is committed; one told before the turn began
// stays before it.
func TestNoticesOfARunningTurnFollowItsMessage(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "running")
	say := func(text string) {
		t.Helper()
		if _, err := s.Enqueue(ctx, OutboxMessage{SessionKey: l.SessionKey, Platform: "telegram", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	say("before the turn")
	clock.Advance(time.Second)
	if err := s.JournalTurn(ctx, JournalEntry{SessionKey: l.SessionKey, Generation: l.Generation, TurnID: "t1", Text: "question"}); err != nil {
		t.Fatal(err)
	}
	say("Queued: I will answer after the current reply.")
	say("Added to the reply in progress.")
	if _, err := s.CommitTurn(ctx, turn(l, "t1", "question", "answer")); err != nil {
		t.Fatal(err)
	}
	say("after the turn")
	msgs, err := s.Transcript(ctx, l.SessionKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Role+":"+m.Text)
	}
	want := "notice:before the turn|user:question|notice:Queued: I will answer after the current reply.|" +
		"notice:Added to the reply in progress.|assistant:answer|notice:after the turn"
	if strings.Join(got, "|") != want {
		t.Errorf("conversation = %q\nwant %q", strings.Join(got, "|"), want)
	}
}
