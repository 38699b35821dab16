package names

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// fakeCodex names threads and echoes each name set, as the app-server
// does (thread/name/updated to the client that set it).
type fakeCodex struct {
	mu    sync.Mutex
	set   []codex.ThreadName
	err   error
	watch []func(codex.ThreadName)
}

func (f *fakeCodex) SetThreadName(_ context.Context, threadID, name string) error {
	f.mu.Lock()
	if f.err != nil {
		f.mu.Unlock()
		return f.err
	}
	f.set = append(f.set, codex.ThreadName{ThreadID: threadID, Name: name})
	f.mu.Unlock()
	f.updated(codex.ThreadName{ThreadID: threadID, Name: name})
	return nil
}

func (f *fakeCodex) OnThreadName(fn func(codex.ThreadName)) { f.watch = append(f.watch, fn) }

// updated is a thread/name/updated: another client's rename, or an echo.
func (f *fakeCodex) updated(u codex.ThreadName) {
	for _, fn := range f.watch {
		fn(u)
	}
}

func (f *fakeCodex) names() []codex.ThreadName {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]codex.ThreadName(nil), f.set...)
}

type fakeStore map[string]store.Lane

func (s fakeStore) Lane(_ context.Context, key string) (store.Lane, error) {
	sl, ok := s[key]
	if !ok {
		return store.Lane{}, store.ErrNotFound
	}
	return sl, nil
}

var (
	topic  = chat.Address{Platform: "telegram", Kind: chat.LaneTopic, ChatID: "-100", TopicID: "7"}
	thread = chat.Address{Platform: "discord", Kind: chat.LaneThread, TopicID: "8"}
	dm     = chat.Address{Platform: "telegram", Kind: chat.LaneDM, ChatID: "42"}
	apiL   = chat.Address{Platform: "api", Kind: chat.LaneAPI, ChatID: "x"}
)

type fixture struct {
	h  *exttest.Host
	cx *fakeCodex
	s  *Sync
}

// newFixture: each address's lane has thread "T-<its key>", loaded.
func newFixture(t *testing.T, addrs ...chat.Address) *fixture {
	t.Helper()
	h := exttest.NewHost(t)
	cx := &fakeCodex{}
	st := fakeStore{}
	h.Threads = map[string]ext.Lane{}
	for _, a := range addrs {
		st[a.SessionKey()] = store.Lane{SessionKey: a.SessionKey(), ThreadID: "T-" + a.SessionKey()}
		h.Threads["T-"+a.SessionKey()] = &exttest.Lane{Addr: a}
	}
	s := New(st, cx)
	s.updates.Spawn = func(f func()) { f() } // the tests look right after an update
	h.Register(t, s)
	return &fixture{h: h, cx: cx, s: s}
}

// TestPlaceRenameNamesTheThread: a topic or thread renamed on its
// platform names the lane's Codex thread once; codex's echo renames no
// place, and the same name again calls codex no more.
func TestPlaceRenameNamesTheThread(t *testing.T) {
	for _, addr := range []chat.Address{topic, thread} {
		t.Run(string(addr.Kind), func(t *testing.T) {
			f := newFixture(t, addr)
			ctx := context.Background()
			f.h.Renamed(ctx, addr, "  Release\tplanning ")
			f.h.Renamed(ctx, addr, "Release planning")
			want := []codex.ThreadName{{ThreadID: "T-" + addr.SessionKey(), Name: "Release planning"}}
			if got := f.cx.names(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("threads named %+v, want %+v", got, want)
			}
			if got := f.h.Renames(); len(got) != 0 {
				t.Errorf("places renamed %+v, want none: codex's echo bounced back", got)
			}
		})
	}
}

// TestThreadRenameNamesThePlace: another client's rename of a lane's
// thread renames its place; the platform's echo of that rename names no
// thread.
func TestThreadRenameNamesThePlace(t *testing.T) {
	f := newFixture(t, topic)
	ctx := context.Background()
	f.cx.updated(codex.ThreadName{ThreadID: "T-" + topic.SessionKey(), Name: "From the IDE"})
	want := []exttest.Rename{{Addr: topic, Name: "From the IDE"}}
	if got := f.h.Renames(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("places renamed %+v, want %+v", got, want)
	}
	f.h.Renamed(ctx, topic, "From the IDE") // the platform's echo
	if got := f.cx.names(); len(got) != 0 {
		t.Errorf("threads named %+v, want none: the platform's echo bounced back", got)
	}
	// A later rename in the chat is the user's, and goes through.
	f.h.Renamed(ctx, topic, "Back in the chat")
	if got := f.cx.names(); len(got) != 1 || got[0].Name != "Back in the chat" {
		t.Errorf("threads named %+v, want the chat's rename", got)
	}
}

// TestQuickRenamesDoNotBounce: two renames in the chat before codex's
// echoes arrive leave both sides at the second name; neither echo
// renames the place back.
func TestQuickRenamesDoNotBounce(t *testing.T) {
	f := newFixture(t, thread)
	id := "T-" + thread.SessionKey()
	held := f.cx.watch[0] // codex's echoes are held back, then sent late
	f.cx.watch = nil
	ctx := context.Background()
	f.h.Renamed(ctx, thread, "A")
	f.h.Renamed(ctx, thread, "B")
	held(codex.ThreadName{ThreadID: id, Name: "A"})
	held(codex.ThreadName{ThreadID: id, Name: "B"})
	if got := f.h.Renames(); len(got) != 0 {
		t.Errorf("places renamed %+v, want none", got)
	}
}

// TestOldEchoExpires: a rename of ours whose echo never came does not
// swallow a real rename to that name long after.
func TestOldEchoExpires(t *testing.T) {
	f := newFixture(t, topic)
	now := f.h.Clock()
	f.h.Clock = func() time.Time { return now }
	f.cx.updated(codex.ThreadName{ThreadID: "T-" + topic.SessionKey(), Name: "X"}) // place renamed to X, no echo comes
	ctx := context.Background()
	f.h.Renamed(ctx, topic, "Y")
	now = now.Add(echoTTL + time.Second)
	f.h.Renamed(ctx, topic, "X")
	got := f.cx.names()
	if len(got) != 2 || got[1].Name != "X" {
		t.Errorf("threads named %+v, want Y then X", got)
	}
}

// TestNoRenames: private chats and the API lane are never renamed, nor is
// a lane without a thread named; a platform that cannot rename is no
// error to retry.
func TestNoRenames(t *testing.T) {
	f := newFixture(t, dm, apiL)
	ctx := context.Background()
	f.h.Renamed(ctx, dm, "Chat with Ana")
	f.h.Renamed(ctx, apiL, "x")
	f.h.Renamed(ctx, topic, "No lane yet")
	f.cx.updated(codex.ThreadName{ThreadID: "T-" + dm.SessionKey(), Name: "n"})
	f.cx.updated(codex.ThreadName{ThreadID: "T-" + apiL.SessionKey(), Name: "n"})
	f.cx.updated(codex.ThreadName{ThreadID: "unknown", Name: "n"})
	if got := f.cx.names(); len(got) != 0 {
		t.Errorf("threads named %+v, want none", got)
	}
	if got := f.h.Renames(); len(got) != 0 {
		t.Errorf("places renamed %+v, want none", got)
	}

	g := newFixture(t, thread)
	g.h.RenameErr = fmt.Errorf("discord: %w", chat.ErrCannotRename)
	g.cx.updated(codex.ThreadName{ThreadID: "T-" + thread.SessionKey(), Name: "Refused"})
	// Not renamed: the platform's name, when it comes, is a real rename.
	g.h.Renamed(ctx, thread, "Refused")
	if got := g.cx.names(); len(got) != 1 {
		t.Errorf("threads named %+v, want the chat's rename once", got)
	}
}

// TestCodexFailureIsNotKnown: a thread/name/set that failed leaves the
// name unknown, so the same rename again tries again.
func TestCodexFailureIsNotKnown(t *testing.T) {
	f := newFixture(t, topic)
	ctx := context.Background()
	f.cx.err = errors.New("codex: process died")
	f.h.Renamed(ctx, topic, "Again")
	f.cx.err = nil
	f.h.Renamed(ctx, topic, "Again")
	if got := f.cx.names(); len(got) != 1 {
		t.Errorf("threads named %+v, want one after the retry", got)
	}
}

func TestTidy(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"spaces", " a \n b\t", "a b"},
		{"empty", " \x00 ", ""},
		{"long", strings.Repeat("é", 120), strings.Repeat("é", 99) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Tidy(tt.in); got != tt.want {
				t.Errorf("Tidy(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
