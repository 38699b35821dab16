// Package reroute tells a lane when Codex answered one of its turns with
// another model than the one asked for (model/rerouted: the model server
// answered as another model, e.g. for high-risk cyber activity), or when
// Codex's guardian warned about what the turn did: without it the chat
// would never know. Each is one line, sent just before the turn's reply.
package reroute

import (
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// maxLines bounds what one turn may add: codex sends a reroute once per
// turn, but a guardian may warn on every action it reviews.
const maxLines = 5

// Notices is the feature.
type Notices struct {
	host ext.Host
	log  *zap.Logger
}

// New is the feature.
func New() *Notices { return &Notices{log: zap.NewNop()} }

// Name is the feature's name.
func (n *Notices) Name() string { return "reroute" }

// Register watches every turn.
func (n *Notices) Register(h ext.Host) error {
	n.host, n.log = h, h.Logger()
	h.OnWatch(func(t ext.Turn, _ string, _ time.Time) ext.TurnWatcher {
		return &watcher{n: n, addr: t.Lane().Address(), key: t.Lane().Key()}
	})
	return nil
}

// watcher collects one turn's lines; they are sent when the turn ends,
// before its reply (Stop runs before the reply is queued).
type watcher struct {
	n    *Notices
	addr chat.Address
	key  string

	mu      sync.Mutex
	lines   []string
	dropped int
	stopped bool
}

// Progress keeps the reroutes and warnings; it must not block, so it
// only remembers them.
func (w *watcher) Progress(p codex.Progress) {
	var line string
	switch {
	case p.Kind == codex.ProgressReroute && p.Reroute != nil:
		line = ext.RerouteLine(*p.Reroute)
		w.n.log.Info("turn.rerouted", zap.String("lane", w.key), zap.String("from", p.Reroute.From),
			zap.String("to", p.Reroute.To), zap.String("reason", p.Reroute.Reason))
	case p.Kind == codex.ProgressGuardian:
		line = "Codex's guardian warned: " + ext.Brief(p.Text)
		w.n.log.Info("turn.guardian_warning", zap.String("lane", w.key), zap.String("message", ext.Brief(p.Text)))
	default:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.lines {
		if l == line {
			return
		}
	}
	if len(w.lines) == maxLines {
		w.dropped++
		return
	}
	w.lines = append(w.lines, line)
}

// Stop sends what the turn collected, as one notice about the lane, not
// a reply to the turn's message: that is the turn's answer, which follows
// (the API lane's request ends with what replies to it).
func (w *watcher) Stop(time.Time, []chat.Button) {
	w.mu.Lock()
	lines, dropped, again := w.lines, w.dropped, w.stopped
	w.stopped = true
	w.mu.Unlock()
	if again || len(lines) == 0 {
		return
	}
	text := strings.Join(lines, "\n")
	if dropped > 0 {
		text += "\n(and more warnings)"
	}
	w.n.host.Notify(w.n.host.Context(), w.addr, "", text)
}

// Compile-time check that the watcher is what the host expects.
var _ ext.TurnWatcher = (*watcher)(nil)
