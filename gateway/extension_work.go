package gateway

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// The core's side of ext.WorkHooks: hooks around a lane's queued work.

// workServices are what the work hooks use of the core.
type workServices struct {
	refuse   refusals
	laneDirs func(sessionKey string) ext.LaneDirs
	profile  string       // codex.isolation's permissions profile ("" when lanes are not isolated)
	files    *files.Store // nil: no files are kept
	lanes    *laneTable
}

// extWorkHooks is a feature's host's ext.WorkHooks: the hooks around a
// lane's queued work and the services they use.
type extWorkHooks struct{ *extCore }

var _ ext.WorkHooks = extWorkHooks{}

func newWorkServices(g *Gateway) workServices {
	return workServices{
		refuse:   refusals{journal: g.journal, st: g.st, inbox: g.inbox, out: g.out, log: g.log},
		laneDirs: laneDirs(g.cfg),
		profile:  g.cfg.Isolation.Profile,
		files:    g.cfg.Files,
		lanes:    g.lanes,
	}
}

// itemView is what a feature sees of a queued item.
func itemView(it item) ext.Item {
	return ext.Item{Turn: it.kind == itemTurn, InboundID: it.inboundID, ReplyTo: replyTarget(it)}
}

func (e extWorkHooks) OnRefuse(fn func(ctx context.Context, l ext.Lane, it ext.Item) string) {
	e.h.hooks.refuse = append(e.h.hooks.refuse, func(ctx context.Context, l *lane, it item) bool {
		reason := fn(ctx, e.lane(l), itemView(it))
		if reason == "" {
			return false
		}
		e.work.refuse.refuse(ctx, l, it, reason)
		return true
	})
}

func (e extWorkHooks) OnInput(fn func(ctx context.Context, t ext.Turn, in *codex.TurnInput)) {
	e.h.hooks.input = append(e.h.hooks.input, func(ctx context.Context, t *turn, in *codex.TurnInput) {
		fn(ctx, e.turn(t), in)
	})
}

func (e extWorkHooks) OnAfter(fn func(ctx context.Context, l ext.Lane, it ext.Item)) {
	e.h.hooks.after = append(e.h.hooks.after, func(ctx context.Context, l *lane, it item) { fn(ctx, e.lane(l), itemView(it)) })
}

func (e extWorkHooks) OnPrepare(fn func(ctx context.Context, t ext.Turn)) {
	e.h.hooks.prepare = append(e.h.hooks.prepare, func(ctx context.Context, t *turn) { fn(ctx, e.turn(t)) })
}

func (e extWorkHooks) OnThread(fn func(sl store.Lane, dir string, cfg *codex.ThreadConfig)) {
	e.h.hooks.thread = append(e.h.hooks.thread, fn)
}

func (e extWorkHooks) OnAudio(fn func(ctx context.Context, l ext.Lane, path string) string) {
	e.h.transcribes = true
	e.h.hooks.prepare = append(e.h.hooks.prepare, func(ctx context.Context, t *turn) {
		for _, path := range t.it.audio {
			t.it.text += fn(ctx, e.lane(t.l), path)
		}
	})
}

func (e extWorkHooks) OnFinished(fn func(t ext.Turn, res codex.TurnResult)) {
	e.h.hooks.finished = append(e.h.hooks.finished, func(t *turn, res codex.TurnResult) { fn(e.turn(t), res) })
}

func (e extWorkHooks) Tool(spec codex.DynamicTool, fn func(ctx context.Context, call codex.ToolCall) codex.ToolResult) {
	e.h.tools[spec.Name] = fn
	e.h.hooks.thread = append(e.h.hooks.thread, func(_ store.Lane, _ string, cfg *codex.ThreadConfig) {
		cfg.DynamicTools = append(slices.Clip(cfg.DynamicTools), spec)
	})
}

func (e extWorkHooks) LaneOfThread(threadID string) (ext.Lane, bool) {
	l := e.work.lanes.ofThread(threadID)
	if l == nil {
		return nil, false
	}
	return e.lane(l), true
}

func (e extWorkHooks) LaneDirs(sessionKey string) ext.LaneDirs { return e.work.laneDirs(sessionKey) }
func (e extWorkHooks) LaneProfile() string                     { return e.work.profile }
func (e extWorkHooks) Files() *files.Store                     { return e.work.files }

// Dir is the turn's working directory (ext.Turn).
func (x extTurn) Dir() string { return x.t.dir }

// laneDirs names the directories that are a lane's own under cfg: the
// same places projects, worktrees and the files store put them.
func laneDirs(cfg Config) func(sessionKey string) ext.LaneDirs {
	workRoot := ""
	if cfg.Isolation.on() {
		workRoot = cfg.Thread.Cwd // without isolation lanes share codex.cwd: the operator's
	}
	return func(key string) ext.LaneDirs {
		var d ext.LaneDirs
		if workRoot != "" {
			d.Work = files.WorkDir(workRoot, key)
		}
		if cfg.Worktrees != "" {
			d.Worktrees = filepath.Join(cfg.Worktrees, files.DirName(key))
		}
		if cfg.Isolation.TempRoot != "" {
			d.Temp = filepath.Join(cfg.Isolation.TempRoot, files.DirName(key))
		}
		if cfg.Files != nil {
			d.Files = cfg.Files.LaneDir(key)
		}
		return d
	}
}

// AddFiles adds files to what the turn sends (ext.Turn).
func (x extTurn) AddFiles(files []store.OutboxMessage) bool { return x.t.cur.addFiles(files) }

// Running is the lane's running turn (ext.Lane).
func (x extLane) Running() (ext.RunningTurn, bool) {
	l := x.l
	cur, dir := l.curDir()
	if cur == nil {
		return nil, false
	}
	return runningTurn{cur: cur, dir: dir}, true
}

// runningTurn is a lane's turn as a tool call sees it: files it sends go
// to that turn or to none, never to the lane's next.
type runningTurn struct {
	cur *turnState
	dir string
}

func (r runningTurn) Dir() string                         { return r.dir }
func (r runningTurn) SendFile(f store.OutboxMessage) bool { return r.cur.addSentFile(f) }
