package gateway_test

import (
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
)

// lastCwd is the working directory the model's last request for a thread
// names in its environment context.
func (w *world) lastCwd(t *testing.T, thread string) string {
	t.Helper()
	reqs := w.model.RequestsForThread(thread)
	if len(reqs) == 0 {
		t.Fatalf("no model request for thread %s", thread)
	}
	return reqs[len(reqs)-1].Environment("cwd")
}

// TestIntegrationProjectCwdSurvivesRestartAndNew: with the real app-server,
// /project B makes the next model request carry B's directory as the
// environment's cwd on the same thread; after a restart (resume) and after
// /new (a fresh thread) it still does.
func TestIntegrationProjectCwdSurvivesRestartAndNew(t *testing.T) {
	w := newWorld(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	w.features.Projects = projects.Settings{Projects: map[string]string{"A": dirA, "B": dirB}}
	cfg := gateway.Config{}
	gw := w.start(t, cfg)

	first := gw.ask(t, "alpha", "hello")
	if got := w.lastCwd(t, first.ThreadID); got != w.dir {
		t.Fatalf("without a project the request's cwd = %q, want codex.cwd %s", got, w.dir)
	}
	if r := gw.ask(t, "alpha", "/project B"); !strings.Contains(r.Reply, "now works in "+dirB) {
		t.Fatalf("/project B answered %q", r.Reply)
	}
	r := gw.ask(t, "alpha", "where do you work now?")
	if r.ThreadID != first.ThreadID {
		t.Fatalf("after /project B the lane answered on %s, want its thread %s kept", r.ThreadID, first.ThreadID)
	}
	if got := w.lastCwd(t, r.ThreadID); got != dirB {
		t.Fatalf("after /project B the request's cwd = %q, want %s", got, dirB)
	}

	gw.stop()
	gw = w.start(t, cfg)
	r = gw.ask(t, "alpha", "and after a restart?")
	if r.ThreadID != first.ThreadID {
		t.Fatalf("after restart answered on %s, want %s resumed", r.ThreadID, first.ThreadID)
	}
	if got := w.lastCwd(t, r.ThreadID); got != dirB {
		t.Errorf("after restart the request's cwd = %q, want %s", got, dirB)
	}
	if st := gw.ask(t, "alpha", "/status"); !strings.Contains(st.Reply, "Project: B ("+dirB+")") {
		t.Errorf("/status %q lacks project B", st.Reply)
	}

	gw.ask(t, "alpha", "/new")
	fresh := gw.ask(t, "alpha", "a fresh thread")
	if fresh.ThreadID == "" || fresh.ThreadID == first.ThreadID {
		t.Fatalf("after /new thread %q, want a new one", fresh.ThreadID)
	}
	if got := w.lastCwd(t, fresh.ThreadID); got != dirB {
		t.Errorf("after /new the request's cwd = %q, want %s", got, dirB)
	}
}
