package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// terminal is a second app-server on the world's CODEX_HOME: what the
// Codex CLI in a terminal is to the gateway.
func (w *world) terminal(t *testing.T) *codex.Client {
	t.Helper()
	ctx := context.Background()
	c, err := codex.Start(ctx, codex.Options{Command: w.bin, Args: codextest.Args(w.model.URL), Home: w.home,
		Env: codextest.Env(), Dir: t.TempDir(), StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("terminal codex.Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(ctx) })
	return c
}

// terminalTurn runs one turn on thread (started in dir when thread is
// "") in the terminal, then lets the thread go, as quitting the CLI does.
func terminalTurn(t *testing.T, c *codex.Client, thread, dir, text string) string {
	t.Helper()
	ctx := context.Background()
	en, err := c.EnsureThread(ctx, thread, codex.ThreadConfig{Cwd: dir})
	if err != nil || (thread != "" && en.ThreadID != thread) {
		t.Fatalf("terminal EnsureThread(%q): %+v, %v", thread, en, err)
	}
	if res, err := c.RunTurn(ctx, en.ThreadID, codex.TurnInput{Text: text}, codex.TurnEvents{}); err != nil || res.Status != codex.TurnCompleted {
		t.Fatalf("terminal turn: %+v, %v", res, err)
	}
	if err := c.Release(ctx, en.ThreadID); err != nil {
		t.Fatalf("terminal release: %v", err)
	}
	return en.ThreadID
}

// TestIntegrationThreadsAttachAndHandoff: a thread the terminal started
// in the project's checkout is listed by /threads, attached by a prefix of
// its id and continued with its context; another lane is refused it;
// /handoff prints the command that resumes it, and what the terminal adds
// then reaches the lane's next request.
func TestIntegrationThreadsAttachAndHandoff(t *testing.T) {
	w := newWorld(t)
	repo, root := gitRepo(t), t.TempDir()
	w.features.CodexHome = w.home
	w.features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	gw := w.start(t, gateway.Config{Worktrees: root})
	term := w.terminal(t)
	cli := terminalTurn(t, term, "", repo, "CLI-SESSION remember the word PAPAYA")

	gw.ask(t, "alpha", "/project app")
	own := gw.ask(t, "alpha", "lane work")
	list := gw.ask(t, "alpha", "/threads").Reply
	if !strings.Contains(list, cli) || !strings.Contains(list, "CLI-SESSION") || !strings.Contains(list, own.ThreadID+" — ") {
		t.Fatalf("/threads answered %q; want the terminal's %s and the lane's %s", list, cli, own.ThreadID)
	}
	if strings.Index(list, own.ThreadID) > strings.Index(list, cli) {
		t.Errorf("/threads is not newest first: %q", list)
	}

	if r := gw.ask(t, "alpha", "/attach ffffffff"); !strings.Contains(r.Reply, `No thread listed for this conversation's project (`+repo) ||
		!strings.Contains(r.Reply, `starts with "ffffffff"`) {
		t.Errorf("/attach of an unknown id answered %q", r.Reply)
	}
	common := commonPrefix(cli, own.ThreadID)
	if common == "" {
		t.Fatalf("thread ids %s and %s share no prefix to be ambiguous with", cli, own.ThreadID)
	}
	if r := gw.ask(t, "alpha", "/attach "+common); !strings.Contains(r.Reply, "is the start of 2 threads") {
		t.Errorf("/attach of an ambiguous prefix %q answered %q", common, r.Reply)
	}
	unique := cli[:len(common)+1]
	if r := gw.ask(t, "alpha", "/attach "+unique); !strings.Contains(r.Reply, "Attached thread "+cli) {
		t.Fatalf("/attach answered %q", r.Reply)
	}
	next := gw.ask(t, "alpha", "what word?")
	if next.ThreadID != cli || !strings.Contains(w.lastRequestFor(t, cli), "PAPAYA") {
		t.Errorf("after /attach the lane ran on %s without the terminal's context", next.ThreadID)
	}
	if sl, err := gw.st.Lane(context.Background(), "v1:api:alpha"); err != nil || sl.ThreadID != cli || sl.Binding != store.BindingConfirmed {
		t.Errorf("after a turn on the attached thread the lane is %+v, %v; want %s confirmed", sl, err, cli)
	}
	gw.ask(t, "beta", "/project app")
	gw.ask(t, "beta", "hello")
	if r := gw.ask(t, "beta", "/attach "+cli); !strings.Contains(r.Reply, "held by another conversation") {
		t.Errorf("a second lane attaching the thread was answered %q", r.Reply)
	}

	h := gw.ask(t, "alpha", "/handoff").Reply
	if !strings.Contains(h, "cd "+worktreeOf(root, "alpha", "app")+" && CODEX_HOME="+w.home+" codex resume "+cli) {
		t.Errorf("/handoff answered %q", h)
	}
	terminalTurn(t, term, cli, repo, "TERMINAL-WORK added in the terminal")
	back := gw.ask(t, "alpha", "back in the chat")
	if text := w.lastRequestFor(t, cli); back.ThreadID != cli || !strings.Contains(text, "TERMINAL-WORK") {
		t.Errorf("after the terminal's turn the lane's request lacks it (thread %s)", back.ThreadID)
	}
}

// TestIntegrationAttachOnlyListedFreeThreads: /attach reaches
// only threads /threads lists for the lane's project that no lane holds
// and no lane let go of. Another lane's thread released by /new, another
// lane's current thread and a thread of another directory are refused
// with their reason, and the lane's model never sees what they hold; a
// listed thread no lane ever had is attached.
func TestIntegrationAttachOnlyListedFreeThreads(t *testing.T) {
	w := newWorld(t)
	repo := gitRepo(t)
	w.features.CodexHome = w.home
	w.features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	gw := w.start(t, gateway.Config{})
	term := w.terminal(t)
	elsewhere := terminalTurn(t, term, "", t.TempDir(), "ELSEWHERE-SECRET remember the word KIWI")

	gw.ask(t, "alpha", "/project app")
	released := gw.ask(t, "alpha", "RELEASED-SECRET remember the word MANGO").ThreadID
	gw.ask(t, "alpha", "/new")
	held := gw.ask(t, "alpha", "HELD-SECRET remember the word GUAVA").ThreadID
	if released == "" || held == "" || released == held {
		t.Fatalf("alpha's threads: %q before /new, %q after", released, held)
	}
	gw.ask(t, "beta", "/project app")
	own := gw.ask(t, "beta", "beta's own work").ThreadID
	if list := gw.ask(t, "beta", "/threads").Reply; !strings.Contains(list, released) || !strings.Contains(list, held) {
		t.Fatalf("/threads on beta = %q; want alpha's threads listed (same checkout)", list)
	}

	refusals := []struct{ name, thread, want string }{
		{"released by another lane", released, "was released by another conversation"},
		{"held by another lane", held, "is held by another conversation"},
		{"not listed for the project", elsewhere, "No thread listed for this conversation's project"},
	}
	for _, r := range refusals {
		if got := gw.ask(t, "beta", "/attach "+r.thread).Reply; !strings.Contains(got, r.want) {
			t.Errorf("/attach of a thread %s answered %q; want %q", r.name, got, r.want)
		}
	}
	after := gw.ask(t, "beta", "which words do you know?")
	if after.ThreadID != own {
		t.Fatalf("after the refusals beta ran on %s, want its own %s", after.ThreadID, own)
	}
	for _, secret := range []string{"MANGO", "GUAVA", "KIWI"} {
		if strings.Contains(w.lastRequestFor(t, own), secret) {
			t.Errorf("beta's model was shown %s from a thread it was refused", secret)
		}
	}

	free := terminalTurn(t, term, "", repo, "FREE-THREAD remember the word LIME")
	if got := gw.ask(t, "beta", "/attach "+free).Reply; !strings.Contains(got, "Attached thread "+free) {
		t.Fatalf("/attach of a listed thread no lane had answered %q", got)
	}
	if next := gw.ask(t, "beta", "and now?"); next.ThreadID != free || !strings.Contains(w.lastRequestFor(t, free), "LIME") {
		t.Errorf("after /attach beta ran on %s without the free thread's context", next.ThreadID)
	}
}

func commonPrefix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}
