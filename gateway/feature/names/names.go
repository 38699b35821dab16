// Package names keeps a lane's place and its Codex thread named alike,
// both ways: a Discord thread or Telegram forum topic renamed in the chat
// renames the lane's Codex thread (thread/name/set, what codex's CLI and
// IDE list it by), and a thread renamed by another client of the
// app-server (thread/name/updated) renames the place where its platform
// can and the bot may. Private chats and the API lane are never renamed:
// their names are not the conversation's.
package names

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// callTimeout bounds each rename: one runs on the platform's delivery.
const callTimeout = 10 * time.Second

// echoTTL is how long a rename of ours waits for its echo. Codex echoes
// every thread/name/set at once; a platform echoes a rename within
// seconds, or not at all (a name it already had), and an echo never
// consumed must not swallow a real rename to that name much later.
const echoTTL = 2 * time.Minute

// maxNameRunes is how long a name may be: Discord's limit on a thread's
// name (Telegram's topics take 128), so a name goes both ways unchanged.
const maxNameRunes = 100

// Store is the lane's row: its thread.
type Store interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
}

// Runtime is codex's thread names.
type Runtime interface {
	SetThreadName(ctx context.Context, threadID, name string) error
	OnThreadName(fn func(codex.ThreadName))
}

var (
	_ Store   = (*store.Store)(nil)
	_ Runtime = (*codex.Client)(nil)
)

// Sync is the feature.
type Sync struct {
	st   Store
	cx   Runtime
	host ext.Host
	log  *zap.Logger
	// updates are codex's name updates, handled in order off its reader.
	updates *ext.Serial[codex.ThreadName]

	mu sync.Mutex
	// ours are the renames this feature made, by side ("codex:" thread,
	// "place:" lane key), waiting for their echo: the echo is dropped, so
	// a rename never bounces back.
	ours map[string][]echo
	// known is the name each lane's place and thread had when this
	// feature last renamed or saw one, by lane key: a rename to it is
	// none.
	known map[string]string
}

type echo struct {
	name  string
	until time.Time
}

// New is the feature over st and cx.
func New(st Store, cx Runtime) *Sync {
	s := &Sync{st: st, cx: cx, log: zap.NewNop(), ours: make(map[string][]echo), known: make(map[string]string)}
	s.updates = ext.NewSerial(func(u codex.ThreadName) { s.renamePlace(s.host.Context(), u) })
	return s
}

// Name is the feature's name.
func (s *Sync) Name() string { return "names" }

// Register hears the platforms' renames and codex's.
func (s *Sync) Register(h ext.Host) error {
	s.host, s.log = h, h.Logger()
	h.OnRenamed(s.placeRenamed)
	s.cx.OnThreadName(s.threadRenamed)
	return nil
}

// named reports whether addr is a place whose name is the conversation's.
func named(addr chat.Address) bool {
	return addr.Kind != chat.LaneDM && addr.Kind != chat.LaneAPI
}

// placeRenamed names the lane's thread as its place was renamed.
func (s *Sync) placeRenamed(ctx context.Context, in chat.Inbound) {
	name := Tidy(in.Title)
	if !named(in.Address) || name == "" {
		return
	}
	key := in.Address.SessionKey()
	if s.takeEcho("place:"+key, name) || !s.changes(key, name) || !s.host.Serves(key) {
		return
	}
	sl, err := s.st.Lane(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return
	case err != nil:
		s.log.Warn("names.lane_failed", zap.String("lane", key), zap.Error(err))
		return
	case sl.ThreadID == "" || sl.Binding == store.BindingLost:
		s.log.Debug("names.no_thread", zap.String("lane", key))
		return
	}
	s.expect("codex:"+sl.ThreadID, name)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := s.cx.SetThreadName(cctx, sl.ThreadID, name); err != nil {
		s.takeEcho("codex:"+sl.ThreadID, name)
		s.log.Warn("names.thread_rename_failed", zap.String("lane", key), zap.Error(err))
		return
	}
	s.setKnown(key, name)
	s.log.Info("names.thread_renamed", zap.String("lane", key), zap.String("thread", sl.ThreadID))
}

// threadRenamed hears codex's name updates (on the client's reader: it
// must not block); they are handled in order, off it.
func (s *Sync) threadRenamed(u codex.ThreadName) { s.updates.Push(u) }

// renamePlace renames the place of the lane whose thread codex renamed,
// unless the rename was this feature's own.
func (s *Sync) renamePlace(ctx context.Context, u codex.ThreadName) {
	if u.Name == "" || s.takeEcho("codex:"+u.ThreadID, u.Name) {
		return
	}
	lane, ok := s.host.LaneOfThread(u.ThreadID)
	if !ok {
		s.log.Debug("names.thread_without_lane", zap.String("thread", u.ThreadID))
		return
	}
	addr, key, name := lane.Address(), lane.Key(), Tidy(u.Name)
	if !named(addr) || name == "" || !s.changes(key, name) {
		return
	}
	s.expect("place:"+key, name)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err := s.host.RenamePlace(cctx, addr, name)
	switch {
	case errors.Is(err, chat.ErrCannotRename):
		s.takeEcho("place:"+key, name)
		s.log.Info("names.place_not_renamed", zap.String("lane", key), zap.Error(err))
	case err != nil:
		s.takeEcho("place:"+key, name)
		s.log.Warn("names.place_rename_failed", zap.String("lane", key), zap.Error(err))
	default:
		s.setKnown(key, name)
		s.log.Info("names.place_renamed", zap.String("lane", key), zap.String("thread", u.ThreadID))
	}
}

// expect notes a rename of ours on side, whose echo is to be dropped.
func (s *Sync) expect(side, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ours[side] = append(s.live(side), echo{name: name, until: s.host.Now().Add(echoTTL)})
}

// takeEcho reports whether name on side is the echo of a rename of ours,
// and forgets that rename.
func (s *Sync) takeEcho(side, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	waiting := s.live(side)
	for i, e := range waiting {
		if e.name == name {
			waiting = append(waiting[:i], waiting[i+1:]...)
			s.store(side, waiting)
			return true
		}
	}
	s.store(side, waiting)
	return false
}

// live are side's renames still waiting for their echo; s.mu is held.
func (s *Sync) live(side string) []echo {
	now := s.host.Now()
	var waiting []echo
	for _, e := range s.ours[side] {
		if now.Before(e.until) {
			waiting = append(waiting, e)
		}
	}
	return waiting
}

func (s *Sync) store(side string, waiting []echo) {
	if len(waiting) == 0 {
		delete(s.ours, side)
		return
	}
	s.ours[side] = waiting
}

// changes reports whether name is not what the lane key is known by.
func (s *Sync) changes(key, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known[key] != name
}

func (s *Sync) setKnown(key, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known[key] = name
}

// Tidy makes name one line of at most maxNameRunes runes, with "…" when
// shortened: "" when nothing is left of it.
func Tidy(name string) string {
	name = strings.Join(strings.FieldsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	runes := []rune(name)
	if len(runes) <= maxNameRunes {
		return name
	}
	return strings.TrimRight(string(runes[:maxNameRunes-1]), " ") + "…"
}
