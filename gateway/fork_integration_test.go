package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
)

// TestIntegrationForkOnTheAPI: /fork on an API lane answers with the new
// lane and its thread; that lane's first request carries the parent's
// context on its own thread, it works in its own worktree started from
// the parent's files, and neither lane's later files reach the other.
func TestIntegrationForkOnTheAPI(t *testing.T) {
	w := newWorld(t)
	w.model.Respond(fileWritingModel)
	repo, root := gitRepo(t), t.TempDir()
	w.features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	gw := w.start(t, gateway.Config{Worktrees: root})
	if r := gw.ask(t, "alpha", "/fork"); !strings.Contains(r.Reply, "Nothing to fork") || r.Fork != nil {
		t.Errorf("/fork before any turn answered %q, fork %+v", r.Reply, r.Fork)
	}
	gw.ask(t, "alpha", "/project app")
	parent := gw.ask(t, "alpha", "remember MANGO and "+writeMarker+" parent draft")

	r := gw.ask(t, "alpha", "/fork experiment")
	if r.Fork == nil || !strings.HasPrefix(r.Fork.Lane, "v1:api:alpha-fork-") || r.Fork.ThreadID == "" || r.Fork.ThreadID == parent.ThreadID {
		t.Fatalf("/fork answered %q with fork %+v", r.Reply, r.Fork)
	}
	if !strings.Contains(r.Reply, `Forked into "experiment"`) {
		t.Errorf("/fork answered %q", r.Reply)
	}
	child := strings.TrimPrefix(r.Fork.Lane, "v1:api:")
	childDir := worktreeOf(root, child, "app")
	if got := readFile(t, filepath.Join(childDir, "notes.txt")); got != "parent draft\n" {
		t.Errorf("the fork's worktree has notes.txt %q, want the parent's", got)
	}

	first := gw.ask(t, child, "what fruit? "+writeMarker+" child draft")
	if first.ThreadID != r.Fork.ThreadID {
		t.Errorf("the fork's lane ran on %s, want %s", first.ThreadID, r.Fork.ThreadID)
	}
	if !strings.Contains(strings.Join(first.Notices, "\n"), "Forked from") {
		t.Errorf("the fork's lane was not told where it came from: %q", first.Notices)
	}
	if text := w.lastRequestFor(t, first.ThreadID); !strings.Contains(text, "MANGO") {
		t.Error("the fork's first request lacks the parent's context")
	}
	if got := w.lastCwd(t, first.ThreadID); got != childDir {
		t.Errorf("the fork works in %q, want its worktree %s", got, childDir)
	}
	if got := readFile(t, filepath.Join(worktreeOf(root, "alpha", "app"), "notes.txt")); got != "parent draft\n" {
		t.Errorf("the fork's write reached the parent: %q", got)
	}
	next := gw.ask(t, "alpha", "still the parent")
	if next.ThreadID != parent.ThreadID || strings.Contains(w.lastRequestFor(t, parent.ThreadID), "what fruit?") {
		t.Error("the parent lane moved or saw the fork's turn")
	}
	if _, err := os.Stat(filepath.Join(repo, "notes.txt")); err == nil {
		t.Error("a lane wrote into the checkout")
	}
}
