package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
)

// TestIntegrationUndoRestoresFilesAndHistory: with the real app-server and
// a real repository, /undo puts the lane's worktree back as it was before
// its last turn and Codex's next request lacks that turn; a second /undo
// goes one more turn back, also across a restart; a thread without turns
// has nothing to undo.
func TestIntegrationUndoRestoresFilesAndHistory(t *testing.T) {
	w := newWorld(t)
	w.model.Respond(fileWritingModel)
	repo, root := gitRepo(t), t.TempDir()
	w.features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	cfg := gateway.Config{Worktrees: root}
	gw := w.start(t, cfg)
	notes := filepath.Join(worktreeOf(root, "alpha", "app"), "notes.txt")

	gw.ask(t, "alpha", "/project app")
	gw.ask(t, "alpha", "first "+writeMarker+" ONE")
	gw.ask(t, "alpha", "second "+writeMarker+" TWO")
	if got := readFile(t, notes); got != "TWO\n" {
		t.Fatalf("notes.txt after two turns = %q", got)
	}
	r := gw.ask(t, "alpha", "/undo")
	if !strings.Contains(r.Reply, `Undid the last turn ("second WRITE: TWO")`) || !strings.Contains(r.Reply, "back as they were before it") {
		t.Errorf("/undo answered %q", r.Reply)
	}
	if got := readFile(t, notes); got != "ONE\n" {
		t.Errorf("notes.txt after /undo = %q, want the first turn's", got)
	}

	gw.stop()
	gw = w.start(t, cfg)
	r = gw.ask(t, "alpha", "/undo")
	if !strings.Contains(r.Reply, `("first WRITE: ONE")`) {
		t.Errorf("the second /undo, after a restart, answered %q", r.Reply)
	}
	if _, err := os.Stat(notes); !os.IsNotExist(err) {
		t.Errorf("notes.txt after the second /undo: %v, want it gone (the first turn made it)", err)
	}
	next := gw.ask(t, "alpha", "what do you remember?")
	text := w.lastRequestFor(t, next.ThreadID)
	for _, gone := range []string{"ONE", "TWO"} {
		if strings.Contains(text, gone) {
			t.Errorf("the request after two /undo still carries %s", gone)
		}
	}
	gw.ask(t, "alpha", "/undo")
	if r := gw.ask(t, "alpha", "/undo"); !strings.Contains(r.Reply, "Nothing to undo") {
		t.Errorf("/undo of a thread without turns answered %q", r.Reply)
	}
}

// TestIntegrationUndoWithoutAWorktreeRewindsTheConversationOnly: a lane
// without a git worktree has its history rewound and is told its files
// were not restored, and why.
func TestIntegrationUndoWithoutAWorktreeRewindsTheConversationOnly(t *testing.T) {
	w := newWorld(t)
	gw := w.start(t, gateway.Config{Worktrees: t.TempDir()})
	if r := gw.ask(t, "beta", "/undo"); !strings.Contains(r.Reply, "Nothing to undo: this conversation has no Codex thread yet") {
		t.Errorf("/undo before any turn answered %q", r.Reply)
	}
	gw.ask(t, "beta", "remember KEEP-ME")
	gw.ask(t, "beta", "remember DROP-ME")
	r := gw.ask(t, "beta", "/undo")
	if !strings.Contains(r.Reply, "Undid the last turn") || !strings.Contains(r.Reply, "files were not restored: this conversation has no project") {
		t.Errorf("/undo without a worktree answered %q", r.Reply)
	}
	next := gw.ask(t, "beta", "and now?")
	text := w.lastRequestFor(t, next.ThreadID)
	if !strings.Contains(text, "KEEP-ME") || strings.Contains(text, "DROP-ME") {
		t.Errorf("after /undo the request should keep KEEP-ME and lack DROP-ME:\n%s", text)
	}
}

// BenchmarkIntegrationUndo is /undo end to end through the API lane with
// the real app-server and a real repository: thread/turns/list,
// thread/revert (a rollout rewrite) and the worktree's restore. The turn
// it undoes runs outside the timer.
func BenchmarkIntegrationUndo(b *testing.B) {
	w := newWorld(b)
	w.model.Respond(fileWritingModel)
	repo, root := gitRepo(b), b.TempDir()
	w.features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	gw := w.start(b, gateway.Config{Worktrees: root})
	gw.ask(b, "bench", "/project app")
	gw.ask(b, "bench", "first "+writeMarker+" kept")
	for b.Loop() {
		b.StopTimer()
		gw.ask(b, "bench", "again "+writeMarker+" undone")
		b.StartTimer()
		if r := gw.ask(b, "bench", "/undo"); !strings.Contains(r.Reply, "back as they were") {
			b.Fatalf("/undo answered %q", r.Reply)
		}
	}
}
