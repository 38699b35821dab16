package gateway

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Projects: a lane works in one of the configured project
// directories (Config.Projects) or, with none chosen, in Config.Thread.Cwd.
// The choice is stored with the lane's routing, so it outlives /new, an
// eviction and a restart, and it is sent with every thread/start,
// thread/resume and turn/start: codex moves the thread's working directory
// (and, with workspace-write, its writable root) with the turn's cwd and
// keeps it across a resume (docs/codex-app-server.md §11). Only a configured name can be chosen;
// nothing typed in chat becomes a path.

// projectPrefix starts the Button.ID of /project's buttons: "project:<name>".
const projectPrefix = "project:"

// maxButtonID is the longest Button.ID every platform takes (Telegram's
// callback_data is 1-64 bytes). A project whose button would be longer is
// offered in the text only; /project NAME still switches to it.
const maxButtonID = 64

// projectSet is the configured projects and the default directory.
type projectSet struct {
	dirs  map[string]string // name → directory
	names []string          // sorted
	// fallback is the directory of a lane without a project: codex.cwd,
	// or with isolated lanes the lane's own directory under it.
	fallback func(sessionKey string) string
}

func newProjectSet(dirs map[string]string, fallback func(sessionKey string) string) projectSet {
	p := projectSet{dirs: make(map[string]string, len(dirs)), fallback: fallback}
	for name, dir := range dirs {
		p.dirs[name] = dir
		p.names = append(p.names, name)
	}
	sort.Strings(p.names)
	return p
}

// find returns the configured name that name means: the same name, else
// the only one equal ignoring case (names are unique that way; a YAML file
// reaches us lower-cased, so /project API must find "api").
func (p projectSet) find(name string) (string, bool) {
	if _, ok := p.dirs[name]; ok {
		return name, true
	}
	for _, n := range p.names {
		if strings.EqualFold(n, name) {
			return n, true
		}
	}
	return "", false
}

// dir is where the lane sessionKey, whose stored project is name, works.
// known is false when the lane names a project that is no longer
// configured: it then works in the default directory.
func (p projectSet) dir(sessionKey, name string) (dir string, known bool) {
	if name == "" {
		return p.fallback(sessionKey), true
	}
	if d, ok := p.dirs[name]; ok {
		return d, true
	}
	return p.fallback(sessionKey), false
}

// describe says where the lane sessionKey with stored project name works,
// for /project and /status.
func (p projectSet) describe(sessionKey, name string) string {
	dir, known := p.dir(sessionKey, name)
	switch {
	case name == "":
		return fmt.Sprintf("none (default directory %s)", orUnset(dir))
	case !known:
		return fmt.Sprintf("%s is no longer configured (working in the default directory %s)", name, orUnset(dir))
	}
	return fmt.Sprintf("%s (%s)", name, dir)
}

// choices lists the configured projects, one a line.
func (p projectSet) choices() string {
	var b strings.Builder
	for _, n := range p.names {
		fmt.Fprintf(&b, "• %s — %s\n", n, p.dirs[n])
	}
	return b.String()
}

// buttons are the choices as buttons, those with an id too long left out.
func (p projectSet) buttons() []Button {
	var out []Button
	for _, n := range p.names {
		if id := projectPrefix + n; len(id) <= maxButtonID {
			out = append(out, Button{ID: id, Label: n})
		}
	}
	return out
}

func orUnset(dir string) string {
	if dir == "" {
		return "(codex's own)"
	}
	return dir
}

// projects is /project: the configured project directories a lane may
// work in, the lane's choice (stored with its routing) and the working
// directory of each turn and thread.
type projects struct {
	set projectSet
	st  projectStore
	out *deliverer
	log *zap.Logger
	// picked, when set, hears of a lane that switched to a project (the
	// worktrees module prepares its worktree in the background).
	picked func(sessionKey, name, dir string)
}

// projectStore is the part of the store /project uses.
type projectStore interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	EnsureLane(ctx context.Context, k store.LaneKey) (store.Lane, error)
	SetProject(ctx context.Context, sessionKey, name string) error
	ForgetProject(ctx context.Context, sessionKey, name string) (bool, error)
}

var _ projectStore = (*store.Store)(nil)

// newProjects offers cfg.Projects, with cfg.Thread.Cwd the directory of a
// lane without a project, or with isolated lanes the root of their own.
func newProjects(cfg Config, st projectStore, out *deliverer, log *zap.Logger) *projects {
	root := cfg.Thread.Cwd
	fallback := func(string) string { return root }
	if cfg.Isolation.on() {
		// Each lane its own directory, so two lanes never share files.
		fallback = func(sessionKey string) string { return files.WorkDir(root, sessionKey) }
	}
	return &projects{set: newProjectSet(cfg.Projects, fallback), st: st, out: out, log: log}
}

// register adds /project and its buttons, the /status line, the turn's
// working directory and the thread's cwd.
func (p *projects) register(h *host) {
	h.command("project", func(ctx context.Context, c commandCall) bool {
		p.command(ctx, c.lane, c.msgID, c.args)
		return true
	})
	h.callback(projectPrefix, p.pressed)
	h.hooks.status = append(h.hooks.status, func(_ context.Context, sl store.Lane, b *strings.Builder) {
		fmt.Fprintf(b, "Project: %s\n", p.describe(sl))
	})
	h.hooks.prepare = append(h.hooks.prepare, func(ctx context.Context, t *turn) { t.dir = p.turnDir(ctx, t) })
	h.hooks.thread = append(h.hooks.thread, func(_ store.Lane, dir string, cfg *codex.ThreadConfig) {
		if dir != "" {
			cfg.Cwd = dir
		}
	})
}

// describe says where a stored lane works (/project, /status, /new's
// notice).
func (p *projects) describe(sl store.Lane) string { return p.set.describe(sl.SessionKey, sl.Project) }

// chosen is the configured project the lane works in and its directory;
// "" for a lane without one (or whose project is no longer configured).
func (p *projects) chosen(sl store.Lane) (name, dir string) {
	if sl.Project == "" {
		return "", ""
	}
	dir, known := p.set.dir(sl.SessionKey, sl.Project)
	if !known {
		return "", ""
	}
	return sl.Project, dir
}

// dirOf is where a stored lane works, without side effects (compaction
// loads a thread with it).
func (p *projects) dirOf(sl store.Lane) string {
	dir, _ := p.set.dir(sl.SessionKey, sl.Project)
	return dir
}

// command is /project (show the lane's project and the choices) and
// /project NAME (switch to it).
func (p *projects) command(ctx context.Context, l *lane, msgID, args string) {
	if args == "" {
		p.show(ctx, l, msgID)
		return
	}
	p.out.Notify(ctx, l.addr, msgID, p.switchTo(ctx, l.addr, args))
}

func (p *projects) show(ctx context.Context, l *lane, msgID string) {
	sl, err := p.st.Lane(ctx, l.key)
	if err != nil {
		p.log.Warn("project.lane_failed", zap.String("lane", l.key), zap.Error(err))
		p.out.Notify(ctx, l.addr, msgID, "Could not read this conversation's project (storage error). Please try again.")
		return
	}
	text := "Project: " + p.describe(sl)
	if len(p.set.names) == 0 {
		p.out.Notify(ctx, l.addr, msgID, text+"\nNo projects are configured (configuration key projects).")
		return
	}
	text += "\nChoices:\n" + p.set.choices() + "Switch with /project NAME."
	p.out.sendWithButtons(ctx, l.addr, msgID, text, p.set.buttons())
}

// switchTo moves the lane at addr to the project named name and says
// what happened. The thread is kept: the next turn carries the new cwd.
func (p *projects) switchTo(ctx context.Context, addr Address, name string) string {
	if len(p.set.names) == 0 {
		return "No projects are configured (configuration key projects); this conversation works in " +
			orUnset(p.set.fallback(addr.SessionKey())) + "."
	}
	found, ok := p.set.find(name)
	if !ok {
		return fmt.Sprintf("Unknown project %q. Choose one of: %s.", name, strings.Join(p.set.names, ", "))
	}
	key := addr.SessionKey()
	if err := p.st.SetProject(ctx, key, found); err != nil {
		p.log.Error("project.store_failed", zap.String("lane", key), zap.String("project", found), zap.Error(err))
		return "Could not switch the project (storage error). Please try again."
	}
	dir, _ := p.set.dir(key, found)
	p.log.Info("project.switched", zap.String("lane", key), zap.String("project", found))
	if p.picked != nil {
		p.picked(key, found, dir)
	}
	return fmt.Sprintf("Project: %s. This conversation now works in %s; the Codex thread is kept.", found, dir)
}

// pressed handles a press of a /project button: "project:<name>".
func (p *projects) pressed(ctx context.Context, in Inbound) {
	name := strings.TrimPrefix(in.Callback, projectPrefix)
	if _, err := p.st.EnsureLane(ctx, laneKey(in.Address)); err != nil {
		p.log.Error("project.lane_failed", zap.String("lane", in.Address.SessionKey()), zap.Error(err))
		p.out.Notify(ctx, in.Address, "", "Could not switch the project (storage error). Please try again.")
		return
	}
	p.out.Notify(ctx, in.Address, "", p.switchTo(ctx, in.Address, name))
}

// turnDir is the directory the turn's lane works in. A stored project that
// is no longer configured is forgotten, and the lane told once, so that it
// works in the default directory from now on rather than failing.
func (p *projects) turnDir(ctx context.Context, t *turn) string {
	dir, known := p.set.dir(t.l.key, t.sl.Project)
	if known {
		return dir
	}
	stale := t.sl.Project
	cleared, err := p.st.ForgetProject(ctx, t.l.key, stale)
	if err != nil {
		// Told again on the next message, which tries again.
		p.log.Warn("project.forget_failed", zap.String("lane", t.l.key), zap.String("project", stale), zap.Error(err))
		return dir
	}
	if cleared {
		p.log.Warn("project.unconfigured", zap.String("lane", t.l.key), zap.String("project", stale))
		p.out.Notify(ctx, t.l.addr, "", fmt.Sprintf("Project %q is no longer configured; this conversation now works in %s. /project shows the choices.",
			stale, orUnset(dir)))
	}
	return dir
}
