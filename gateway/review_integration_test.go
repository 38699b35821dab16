package gateway_test

import (
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestIntegrationReviewPostsTheReviewersFindings: /review on a lane with
// changes in its worktree sends codex's reviewer prompt to the model, in
// the lane's thread and worktree, and posts what the reviewer found; a
// malformed target is refused with the usage.
func TestIntegrationReviewPostsTheReviewersFindings(t *testing.T) {
	w := newWorld(t)
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.InputText(), "acting as a reviewer") {
			return codextest.Reply{Text: "FINDING: notes.txt lacks a trailing summary."}
		}
		return fileWritingModel(req)
	})
	repo, root := gitRepo(t), t.TempDir()
	w.features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	gw := w.start(t, gateway.Config{Worktrees: root})
	gw.ask(t, "alpha", "/project app")
	first := gw.ask(t, "alpha", "please "+writeMarker+" draft")

	r := gw.ask(t, "alpha", "/review")
	if !strings.Contains(r.Reply, "FINDING: notes.txt lacks a trailing summary.") {
		t.Errorf("/review answered %q", r.Reply)
	}
	if r.ThreadID != first.ThreadID {
		t.Errorf("the review ran on thread %s, want the lane's %s", r.ThreadID, first.ThreadID)
	}
	req, ok := reviewRequest(w.model)
	if !ok {
		t.Fatal("the model never got codex's reviewer prompt")
	}
	if got, want := req.Environment("cwd"), worktreeOf(root, "alpha", "app"); got != want {
		t.Errorf("the review ran in %q, want the lane's worktree %s", got, want)
	}
	if !strings.Contains(req.InputText(), "staged, unstaged, and untracked") {
		t.Errorf("the default review is not of the uncommitted changes:\n%s", req.InputText())
	}

	if r := gw.ask(t, "alpha", "/review base"); !strings.Contains(r.Reply, "Usage: /review") {
		t.Errorf("/review base without a branch answered %q", r.Reply)
	}
	gw.ask(t, "alpha", "/review base main")
	if req, ok := reviewRequest(w.model); !ok || !strings.Contains(req.InputText(), "main") {
		t.Error("/review base main did not ask the reviewer about branch main")
	}
}

// reviewRequest is the newest model request carrying codex's reviewer
// instructions (they come before the user message).
func reviewRequest(m *codextest.Model) (codextest.Request, bool) {
	reqs := m.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.Contains(reqs[i].InputText(), "acting as a reviewer") {
			return reqs[i], true
		}
	}
	return codextest.Request{}, false
}
