package roomtalk

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/store"
)

// memStore keeps room lines in memory and counts the takes.
type memStore struct {
	mu    sync.Mutex
	lines map[string][]store.RoomLine
	takes int
}

func (m *memStore) AddRoomLine(_ context.Context, l store.RoomLine) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lines == nil {
		m.lines = make(map[string][]store.RoomLine)
	}
	m.lines[l.SessionKey] = append(m.lines[l.SessionKey], l)
	return nil
}

func (m *memStore) TakeRoomLines(_ context.Context, key string, limit int) ([]store.RoomLine, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.takes++
	lines := m.lines[key]
	delete(m.lines, key)
	if len(lines) > limit {
		lines = lines[len(lines)-limit:]
	}
	return lines, nil
}

// TestTalkKeepsTheOldestOutPastTheBound: past the byte bound the oldest
// line goes.
func TestTalkKeepsTheOldestOutPastTheBound(t *testing.T) {
	got := talkText([]store.RoomLine{{Sender: "Ben", Text: strings.Repeat("x", talkMax)}, {Sender: "Cleo", Text: "short"}})
	if got != header+"\n[Cleo]: short" {
		t.Errorf("past the byte bound the oldest line must go: %q", got)
	}
}

// TestTalkAsksTheStoreOnlyWhenTalkMayBeKept: after a turn took a
// lane's talk, the next addressed messages skip the store's write until
// the room says something again; in cluster mode it always asks.
func TestTalkAsksTheStoreOnlyWhenTalkMayBeKept(t *testing.T) {
	for _, shared := range []bool{false, true} {
		st := &memStore{}
		h := exttest.NewHost(t)
		h.Cluster = shared
		h.Register(t, New(true, 30, st))
		ctx := context.Background()
		group := chat.Address{Platform: "test", Kind: chat.LaneGroup, ChatID: "g"}
		in := chat.Inbound{Address: group, MessageID: "m", SenderID: "ana", Text: "[ana]: hi"}
		h.Text(ctx, in)
		in.Text = "[ana]: again"
		h.Text(ctx, in)
		want := 1
		if shared {
			want = 2
		}
		if st.takes != want {
			t.Errorf("shared %v: %d takes for two turns with nothing said, want %d", shared, st.takes, want)
		}
		h.Ambient(ctx, chat.Inbound{Address: group, MessageID: "a1", SenderID: "ben", Text: "by the way", Ambient: true})
		in.Text = "[ana]: now?"
		if got := h.Text(ctx, in); !strings.Contains(got, "[ben]: by the way") {
			t.Errorf("shared %v: after the room spoke the turn ran %q", shared, got)
		}
	}
}

// TestTalkSkipsWhatIsNoTurn: commands, edits and private chats take no
// talk, and a private chat keeps none.
func TestTalkSkipsWhatIsNoTurn(t *testing.T) {
	st := &memStore{}
	h := exttest.NewHost(t)
	h.Commands = map[string]bool{"/new": true}
	h.Register(t, New(true, 30, st))
	ctx := context.Background()
	group := chat.Address{Platform: "test", Kind: chat.LaneGroup, ChatID: "g"}
	dm := chat.Address{Platform: "test", Kind: chat.LaneDM, ChatID: "d"}
	h.Ambient(ctx, chat.Inbound{Address: dm, MessageID: "d1", SenderID: "ben", Text: "private", Ambient: true})
	h.Ambient(ctx, chat.Inbound{Address: group, MessageID: "a1", SenderID: "ben", Text: "by the way", Ambient: true})
	for _, in := range []chat.Inbound{
		{Address: group, MessageID: "c", Text: "/new"},
		{Address: group, MessageID: "e", Text: "[ana]: fixed", Edited: true},
		{Address: dm, MessageID: "p", Text: "hi"},
	} {
		if got := h.Text(ctx, in); got != in.Text {
			t.Errorf("%q became %q", in.Text, got)
		}
	}
	if st.takes != 0 || len(st.lines[dm.SessionKey()]) != 0 {
		t.Errorf("takes %d, private lines %v: want none", st.takes, st.lines[dm.SessionKey()])
	}
}
