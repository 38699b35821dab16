package replyspool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/store"
)

func turn(lane, id string) store.CompletedTurn {
	return store.CompletedTurn{
		SessionKey: lane, Generation: 3, SessionID: 9, ThreadID: "th-" + lane, TurnID: id, InboundID: 42,
		UserText: "build it", UserMessageID: "m1", AssistantText: "built: " + id, Status: "completed", Confirm: true,
		Reply:     &store.OutboxMessage{SessionKey: lane, Platform: "telegram", Kind: "dm", ChatID: "7", Text: "built", ReplyTo: "m1"},
		Usage:     store.UsageRecord{TurnTokens: 120, TotalTokens: 900},
		Steered:   []store.SteeredInput{{Text: "and test it", MessageID: "m2", InboundID: 43}},
		Files:     []store.OutboxMessage{{SessionKey: lane, Platform: "telegram", Text: "report.txt"}},
		Retryable: true, Retries: &store.RetryTurn{InboundID: 41},
	}
}

// A spooled turn reads back exactly as it was put, per lane, oldest first,
// and is gone once removed.
func TestPutPendingRemove(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "replies"), nil)
	a1, b1, a2 := turn("lane-a", "t1"), turn("lane-b", "t2"), turn("lane-a", "t3")
	for _, ct := range []store.CompletedTurn{a1, b1, a2} {
		if err := s.Put(ct); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Pending("lane-a")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []store.CompletedTurn{a1, a2}) {
		t.Fatalf("lane-a's spooled turns:\n%+v\nwant\n%+v", got, []store.CompletedTurn{a1, a2})
	}
	if all, _ := s.Pending(""); len(all) != 3 {
		t.Fatalf("%d spooled turns in all, want 3", len(all))
	}
	if err := s.Put(a1); err != nil { // the same turn again replaces its file
		t.Fatal(err)
	}
	if err := s.Remove(a1); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(a1); err != nil {
		t.Fatalf("removing a turn not spooled: %v", err)
	}
	if got, _ := s.Pending("lane-a"); !reflect.DeepEqual(got, []store.CompletedTurn{a2}) {
		t.Fatalf("after removing t1: %+v", got)
	}
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		if info, _ := e.Info(); info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600 (it holds the user's text)", e.Name(), info.Mode().Perm())
		}
	}
}

// fakeCommitter answers each commit with the next error of errs (nil
// when they run out) and records the turns.
type fakeCommitter struct {
	errs      []error
	committed []string
}

func (f *fakeCommitter) CommitTurn(_ context.Context, ct store.CompletedTurn) (store.CommitResult, error) {
	var err error
	if len(f.errs) > 0 {
		err, f.errs = f.errs[0], f.errs[1:]
	}
	if err == nil {
		f.committed = append(f.committed, ct.TurnID)
	}
	return store.CommitResult{}, err
}

// Replay commits in order and removes what it settled; a transient
// failure stops it with the rest kept for the next replay; a refusal
// drops the turn and says so.
func TestReplay(t *testing.T) {
	s := New(t.TempDir(), nil)
	for _, id := range []string{"t1", "t2", "t3"} {
		if err := s.Put(turn("lane", id)); err != nil {
			t.Fatal(err)
		}
	}
	refused := errors.New("store: lane gone")
	away := fmt.Errorf("store: commit turn: %w", store.ErrUnavailable)
	c := &fakeCommitter{errs: []error{nil, refused, away}}
	done, err := s.Replay(t.Context(), c, "lane", always)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("replay with the database away: %v", err)
	}
	if done != 2 || !reflect.DeepEqual(c.committed, []string{"t1"}) {
		t.Fatalf("settled %d, committed %v; want t1 committed and t2 refused", done, c.committed)
	}
	if left, _ := s.Pending(""); len(left) != 1 || left[0].TurnID != "t3" {
		t.Fatalf("left spooled %+v, want t3", left)
	}
	done, err = s.Replay(t.Context(), c, "", always)
	if err != nil || done != 1 || !reflect.DeepEqual(c.committed, []string{"t1", "t3"}) {
		t.Fatalf("second replay: %+v, %v; committed %v", done, err, c.committed)
	}
}

// A file that cannot be read back is reported, naming it, and set aside
// for the operator; the readable turns are still replayed.
func TestReplaySetsABrokenFileAside(t *testing.T) {
	s := New(t.TempDir(), nil)
	if err := os.WriteFile(filepath.Join(s.dir, "broken.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(turn("lane", "t1")); err != nil {
		t.Fatal(err)
	}
	c := &fakeCommitter{}
	if _, err := s.Pending(""); !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "broken.json") {
		t.Fatalf("Pending with a broken file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "broken2.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	done, err := s.Replay(t.Context(), c, "", always)
	if err != nil || done != 1 {
		t.Fatalf("replay with a broken file: %d, %v; want the readable turn settled, no error", done, err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "broken.json.unreadable")); err != nil {
		t.Fatalf("the broken file was not set aside: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "broken2.json.unreadable")); err != nil {
		t.Fatalf("the broken file was not set aside by the replay: %v", err)
	}
	if done, err := s.Replay(t.Context(), c, "", always); done != 0 || err != nil {
		t.Fatalf("a second replay: %+v, %v; want nothing left", done, err)
	}
	var none *Spool
	if err := none.Put(turn("l", "t")); err != nil {
		t.Fatal(err)
	}
	if got, err := none.Pending(""); got != nil || err != nil {
		t.Fatalf("a nil spool has %v, %v", got, err)
	}
}

func always(store.CompletedTurn) (bool, error) { return true, nil }

// A spooled turn no longer waiting (told cut off, or rerun, by the node
// that held the lane meanwhile) is dropped, not committed: committing it
// would answer a message the lane was already answered about. A start-up
// replay also removes the temporary file of a Put a crash cut short.
func TestReplayDropsATurnSettledElsewhere(t *testing.T) {
	s := New(t.TempDir(), nil)
	for _, id := range []string{"t1", "t2"} {
		if err := s.Put(turn("lane", id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.dir, ".put-123"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &fakeCommitter{}
	done, err := s.Replay(t.Context(), c, "", func(ct store.CompletedTurn) (bool, error) { return ct.TurnID == "t2", nil })
	if err != nil || done != 2 || !reflect.DeepEqual(c.committed, []string{"t2"}) {
		t.Fatalf("replay: %d, %v, committed %v; want t2 committed and t1 dropped", done, err, c.committed)
	}
	if left, _ := os.ReadDir(s.dir); len(left) != 0 {
		t.Fatalf("left in the spool: %v", left)
	}
	if _, err := s.Replay(t.Context(), c, "", func(store.CompletedTurn) (bool, error) { return false, errors.New("journal unread") }); err != nil {
		t.Fatalf("nothing spooled, the journal is not read: %v", err)
	}
}
