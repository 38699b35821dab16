package gateway

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Projects (issue 12): a lane works in one of the configured project
// directories (Config.Projects) or, with none chosen, in Config.Thread.Cwd.
// The choice is stored with the lane's routing, so it outlives /new, an
// eviction and a restart, and it is sent with every thread/start,
// thread/resume and turn/start: codex moves the thread's working directory
// (and, with workspace-write, its writable root) with the turn's cwd and
// keeps it across a resume (doc §11). Only a configured name can be chosen;
// nothing typed in chat becomes a path.

// projectPrefix starts the Button.ID of /project's buttons: "project:<name>".
const projectPrefix = "project:"

// maxButtonID is the longest Button.ID every platform takes (Telegram's
// callback_data is 1-64 bytes). A project whose button would be longer is
// offered in the text only; /project NAME still switches to it.
const maxButtonID = 64

// projectSet is the configured projects and the default directory.
type projectSet struct {
	dirs     map[string]string // name → directory
	names    []string          // sorted
	fallback string            // the directory of a lane without a project
}

func newProjectSet(dirs map[string]string, fallback string) projectSet {
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

// dir is where a lane whose stored project is name works. known is false
// when the lane names a project that is no longer configured: it then works
// in the default directory.
func (p projectSet) dir(name string) (dir string, known bool) {
	if name == "" {
		return p.fallback, true
	}
	if d, ok := p.dirs[name]; ok {
		return d, true
	}
	return p.fallback, false
}

// describe says where a lane with stored project name works, for /project
// and /status.
func (p projectSet) describe(name string) string {
	dir, known := p.dir(name)
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

// projectCommand is /project (show the lane's project and the choices) and
// /project NAME (switch to it).
func (g *Gateway) projectCommand(ctx context.Context, l *lane, msgID, args string) {
	if args == "" {
		g.showProjects(ctx, l, msgID)
		return
	}
	g.out.notify(ctx, l.addr, msgID, g.switchProject(ctx, l.addr, args))
}

func (g *Gateway) showProjects(ctx context.Context, l *lane, msgID string) {
	sl, err := g.st.Lane(ctx, l.key)
	if err != nil {
		g.log.Warn("project.lane_failed", zap.String("lane", l.key), zap.Error(err))
		g.out.notify(ctx, l.addr, msgID, "Could not read this conversation's project (storage error). Please try again.")
		return
	}
	text := "Project: " + g.projects.describe(sl.Project)
	if len(g.projects.names) == 0 {
		g.out.notify(ctx, l.addr, msgID, text+"\nNo projects are configured (configuration key projects).")
		return
	}
	text += "\nChoices:\n" + g.projects.choices() + "Switch with /project NAME."
	g.out.sendWithButtons(ctx, l.addr, msgID, text, g.projects.buttons())
}

// switchProject moves the lane at addr to the project named name and says
// what happened. The thread is kept: the next turn carries the new cwd.
func (g *Gateway) switchProject(ctx context.Context, addr Address, name string) string {
	if len(g.projects.names) == 0 {
		return "No projects are configured (configuration key projects); this conversation works in " +
			orUnset(g.projects.fallback) + "."
	}
	found, ok := g.projects.find(name)
	if !ok {
		return fmt.Sprintf("Unknown project %q. Choose one of: %s.", name, strings.Join(g.projects.names, ", "))
	}
	key := addr.SessionKey()
	if err := g.st.SetProject(ctx, key, found); err != nil {
		g.log.Error("project.store_failed", zap.String("lane", key), zap.String("project", found), zap.Error(err))
		return "Could not switch the project (storage error). Please try again."
	}
	dir, _ := g.projects.dir(found)
	g.log.Info("project.switched", zap.String("lane", key), zap.String("project", found))
	return fmt.Sprintf("Project: %s. This conversation now works in %s; the Codex thread is kept.", found, dir)
}

// projectCallback handles a press of a /project button: "project:<name>".
func (g *Gateway) projectCallback(ctx context.Context, in Inbound) {
	name := strings.TrimPrefix(in.Callback, projectPrefix)
	if _, err := g.st.EnsureLane(ctx, laneKey(in.Address)); err != nil {
		g.log.Error("project.lane_failed", zap.String("lane", in.Address.SessionKey()), zap.Error(err))
		g.out.notify(ctx, in.Address, "", "Could not switch the project (storage error). Please try again.")
		return
	}
	g.out.notify(ctx, in.Address, "", g.switchProject(ctx, in.Address, name))
}

// turnDir is the directory the turn's lane works in. A stored project that
// is no longer configured is forgotten, and the lane told once, so that it
// works in the default directory from now on rather than failing.
func (g *Gateway) turnDir(ctx context.Context, t *turn) string {
	dir, known := g.projects.dir(t.sl.Project)
	if known {
		return dir
	}
	stale := t.sl.Project
	cleared, err := g.st.ForgetProject(ctx, t.l.key, stale)
	if err != nil {
		// Told again on the next message, which tries again.
		g.log.Warn("project.forget_failed", zap.String("lane", t.l.key), zap.String("project", stale), zap.Error(err))
		return dir
	}
	if cleared {
		g.log.Warn("project.unconfigured", zap.String("lane", t.l.key), zap.String("project", stale))
		g.out.notify(ctx, t.l.addr, "", fmt.Sprintf("Project %q is no longer configured; this conversation now works in %s. /project shows the choices.",
			stale, orUnset(dir)))
	}
	return dir
}

// laneDir is where a stored lane works, without side effects (compaction
// and status use it).
func (g *Gateway) laneDir(sl store.Lane) string {
	dir, _ := g.projects.dir(sl.Project)
	return dir
}

// projectsModule registers /project and its buttons.
func projectsModule(g *Gateway) module {
	return moduleFunc(func(h *host) {
		h.command("project", func(ctx context.Context, c commandCall) bool {
			g.projectCommand(ctx, c.lane, c.msgID, c.args)
			return true
		})
		h.callback(projectPrefix, g.projectCallback)
		h.hooks.status = append(h.hooks.status, func(_ context.Context, sl store.Lane, b *strings.Builder) {
			fmt.Fprintf(b, "Project: %s\n", g.projects.describe(sl.Project))
		})
		h.hooks.prepare = append(h.hooks.prepare, func(ctx context.Context, t *turn) { t.dir = g.turnDir(ctx, t) })
		h.hooks.thread = append(h.hooks.thread, func(_ store.Lane, dir string, cfg *codex.ThreadConfig) {
			if dir != "" {
				cfg.Cwd = dir
			}
		})
	})
}
