package gateway_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// On an idle lane the turn's journal entry is written with the inbound
// row (one commit). gatewayd dying right after that commit, before the
// turn started, leaves what a turn cut off leaves: the next start tells
// the lane once and runs the message only on /retry, never twice. Real
// codex, real SQLite.
func TestJournaledWithInboundButNeverStartedIsToldCutOff(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	in := w.start(t, gateway.Config{})
	if r := in.ask(t, "j", "first"); !strings.Contains(r.Reply, "first") {
		t.Fatalf("first reply %q", r.Reply)
	}
	lanes, err := in.st.Lanes(ctx, 0)
	if err != nil || len(lanes) != 1 {
		t.Fatalf("lanes = %+v, %v", lanes, err)
	}
	l := lanes[0]
	in.stop()

	// The crash: the inbound commit of the next message, and nothing after.
	st, err := store.Open(ctx, w.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := store.LaneKey{SessionKey: l.SessionKey, Platform: l.Platform, Kind: l.Kind, ChatID: l.ChatID,
		TopicID: l.TopicID, UserID: l.UserID}
	if _, _, e, err := st.RecordInboundTurn(ctx, store.Inbound{Platform: l.Platform, MessageID: "crash-1",
		SessionKey: l.SessionKey, Text: "cut text", Lane: key}, "cut text"); err != nil || e == nil {
		t.Fatalf("RecordInboundTurn: %+v, %v", e, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	in2 := w.start(t, gateway.Config{})
	journal, err := in2.st.Journal(ctx)
	if err != nil || len(journal) != 1 || !journal[0].CutOff || journal[0].Text != "cut text" {
		t.Fatalf("journal after the restart = %+v, %v; want the entry told cut off", journal, err)
	}
	if _, ran := w.model.LastRequestWith("cut text"); ran {
		t.Fatal("the message ran again after the restart without /retry")
	}
	r := in2.ask(t, "j", "/retry")
	if !strings.Contains(r.Reply, "cut text") {
		t.Errorf("/retry answered %q, want the cut-off message run", r.Reply)
	}
	told := 0
	for _, n := range r.Notices {
		if strings.Contains(n, "cut off") {
			told++
		}
	}
	if told > 1 {
		t.Errorf("cut-off notices %q, want at most one", r.Notices)
	}
}

// A message on an idle lane needs no journal commit of its own: its entry
// comes with its inbound row. Against the same messages through a store
// that journals them in a commit of its own. Real codex, real SQLite.
func TestIdleLaneTurnJournalsWithItsInboundRow(t *testing.T) {
	journalCommits := func(separate bool) int32 {
		w := newWorld(t)
		var n atomic.Int32
		w.storeAs = func(st *store.Store) gateway.Store {
			counted := &countedJournal{Store: st, n: &n}
			if separate {
				return separateJournal{counted}
			}
			return counted
		}
		in := w.start(t, gateway.Config{})
		for _, text := range []string{"first", "second"} {
			if r := in.ask(t, "k", text); !strings.Contains(r.Reply, text) {
				t.Fatalf("reply %q", r.Reply)
			}
			in.waitIdle(t)
		}
		return n.Load()
	}
	if got := journalCommits(true); got != 2 {
		t.Errorf("separate journal: %d JournalTurn commits for two messages, want 2", got)
	}
	if got := journalCommits(false); got != 0 {
		t.Errorf("%d JournalTurn commits for two messages on an idle lane, want 0 (journaled with the inbound row)", got)
	}
}

// countedJournal is the store, counting JournalTurn.
type countedJournal struct {
	*store.Store
	n *atomic.Int32
}

func (c *countedJournal) JournalTurn(ctx context.Context, e store.JournalEntry) error {
	c.n.Add(1)
	return c.Store.JournalTurn(ctx, e)
}

// separateJournal is the counted store whose RecordInboundTurn writes the
// inbound row and then the turn's journal entry in a commit of its own.
type separateJournal struct{ *countedJournal }

func (s separateJournal) RecordInboundTurn(ctx context.Context, in store.Inbound, text string) (
	id int64, duplicate bool, entry *store.JournalEntry, err error) {
	id, duplicate, err = s.RecordInbound(ctx, in)
	if err != nil || duplicate {
		return id, duplicate, nil, err
	}
	l, err := s.Lane(ctx, in.SessionKey)
	if err != nil {
		return 0, false, nil, err
	}
	e := store.JournalEntry{SessionKey: in.SessionKey, Generation: l.Generation, InboundID: id,
		ThreadID: l.ThreadID, Text: text, StartedAt: in.ReceivedAt}
	if err := s.JournalTurn(ctx, e); err != nil {
		return 0, false, nil, err
	}
	return id, false, &e, nil
}
