package codex_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestIntegrationForkCarriesTheParentsContextOnANewThread: a fork answers
// with the parent's history on its own thread id, and an ephemeral fork's
// question never reaches the parent's next request.
func TestIntegrationForkCarriesTheParentsContextOnANewThread(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	c := startClient(t, m, codextest.Home(t))
	parent := ensure(t, ctx, c, "", codex.OutcomeStarted).ThreadID
	completedTurn(t, ctx, c, parent, secretPrompt)

	for _, ephemeral := range []bool{false, true} {
		fork, err := c.ForkThread(ctx, parent, codex.ForkConfig{Ephemeral: ephemeral})
		if err != nil {
			t.Fatalf("ForkThread(ephemeral %v): %v", ephemeral, err)
		}
		if fork == parent {
			t.Fatalf("fork kept the parent's id %s", parent)
		}
		question := "side question, ephemeral " + map[bool]string{false: "no", true: "yes"}[ephemeral]
		completedTurn(t, ctx, c, fork, question)
		// An ephemeral fork's requests carry the parent's session-id and
		// the fork's thread-id header.
		req, ok := m.LastRequestWith(question)
		if !ok || req.Header.Get("thread-id") != fork {
			t.Fatalf("fork (ephemeral %v): no model request on thread %s asked %q", ephemeral, fork, question)
		}
		if !strings.Contains(req.InputText(), "BANANA-42") {
			t.Errorf("fork (ephemeral %v): its model request lacks the parent's secret", ephemeral)
		}
		if err := c.Release(ctx, fork); err != nil {
			t.Errorf("Release(fork): %v", err)
		}
	}
	completedTurn(t, ctx, c, parent, "back on the parent")
	if text := lastRequest(t, m, parent).InputText(); strings.Contains(text, "side question") {
		t.Errorf("the parent's request carries a fork's question:\n%s", text)
	}
}

// TestIntegrationRevertDropsTurnsAlsoAfterARestart: Turns lists a thread's
// turns with their user text; RevertThread removes a turn and the ones
// after it from what the model sees next, and a resume in a new process
// does not bring them back.
func TestIntegrationRevertDropsTurnsAlsoAfterARestart(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	home := codextest.Home(t)
	a := startClient(t, m, home)
	thread := ensure(t, ctx, a, "", codex.OutcomeStarted).ThreadID
	completedTurn(t, ctx, a, thread, "keep ALPHA")
	second := completedTurn(t, ctx, a, thread, "undo BRAVO")
	completedTurn(t, ctx, a, thread, "undo CHARLIE")

	turns, err := a.Turns(ctx, thread)
	if err != nil {
		t.Fatalf("Turns: %v", err)
	}
	var texts []string
	for _, tu := range turns {
		texts = append(texts, tu.UserText)
	}
	if got := strings.Join(texts, "|"); got != "keep ALPHA|undo BRAVO|undo CHARLIE" {
		t.Fatalf("Turns user texts = %q", got)
	}
	if turns[1].ID != second.TurnID {
		t.Errorf("Turns[1].ID = %q, want the second turn's %q", turns[1].ID, second.TurnID)
	}
	if err := a.RevertThread(ctx, thread, second.TurnID); err != nil {
		t.Fatalf("RevertThread: %v", err)
	}
	after, err := a.Turns(ctx, thread)
	if err != nil || len(after) != 1 || after[0].UserText != "keep ALPHA" {
		t.Fatalf("Turns after revert = %+v, %v; want only the first", after, err)
	}

	if n := killCodexGroups(t, home); n != 1 {
		t.Fatalf("killed %d app-server process groups, want 1", n)
	}
	closeClient(t, a)
	waitNoCodex(t, ctx, home)
	b := startClient(t, m, home)
	ensure(t, ctx, b, thread, codex.OutcomeResumed)
	completedTurn(t, ctx, b, thread, "what is left?")
	text := lastRequest(t, m, thread).InputText()
	if !strings.Contains(text, "keep ALPHA") {
		t.Errorf("the request after revert and resume lost the kept turn:\n%s", text)
	}
	for _, gone := range []string{"BRAVO", "CHARLIE"} {
		if strings.Contains(text, gone) {
			t.Errorf("the request after revert and resume still carries %s:\n%s", gone, text)
		}
	}
}

// TestIntegrationReviewSendsTheReviewerPrompt: review/start on the
// uncommitted changes of a repository asks the model as codex's reviewer
// and the turn's text is what the review found.
func TestIntegrationReviewSendsTheReviewerPrompt(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	repo := gitRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\n// REVIEW-ME\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		r := codextest.DefaultReply(req)
		if strings.Contains(req.InputText(), "acting as a reviewer") {
			r.Text = "The change adds a REVIEW-ME comment; nothing else to flag."
		}
		return r
	})
	c := startClient(t, m, codextest.Home(t))
	got, err := c.EnsureThread(ctx, "", codex.ThreadConfig{Cwd: repo})
	if err != nil {
		t.Fatalf("EnsureThread: %v", err)
	}
	res, err := c.RunReview(ctx, got.ThreadID, codex.ReviewTarget{Kind: codex.ReviewUncommitted}, codex.TurnEvents{})
	if err != nil || res.Status != codex.TurnCompleted {
		t.Fatalf("RunReview: status %q, err %v, error %+v", res.Status, err, res.Error)
	}
	// The reviewer reads the diff itself (with git, through its tools);
	// what reaches the model first is codex's reviewer prompt.
	req := lastRequest(t, m, got.ThreadID)
	for _, want := range []string{"acting as a reviewer", "staged, unstaged, and untracked"} {
		if !strings.Contains(req.InputText(), want) {
			t.Errorf("the review request lacks %q of the reviewer prompt", want)
		}
	}
	if !strings.Contains(res.Text, "nothing else to flag") {
		t.Errorf("review text = %q, want the model's findings", res.Text)
	}
	if _, err := c.RunReview(ctx, got.ThreadID, codex.ReviewTarget{Kind: codex.ReviewBaseBranch}, codex.TurnEvents{}); err == nil {
		t.Error("a base-branch review without a branch was accepted")
	}
}

// TestIntegrationListThreadsOfADirectory: ListThreads by cwd returns the
// threads started there, newest first, and not those of other directories.
func TestIntegrationListThreadsOfADirectory(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	c := startClient(t, m, codextest.Home(t))
	dir, other := t.TempDir(), t.TempDir()
	var ids []string
	for i, cwd := range []string{dir, other, dir} {
		got, err := c.EnsureThread(ctx, "", codex.ThreadConfig{Cwd: cwd})
		if err != nil {
			t.Fatalf("EnsureThread: %v", err)
		}
		completedTurn(t, ctx, c, got.ThreadID, []string{"first in dir", "elsewhere", "second in dir"}[i])
		ids = append(ids, got.ThreadID)
	}
	list, err := c.ListThreads(ctx, codex.ThreadFilter{Cwds: []string{dir}})
	if err != nil {
		t.Fatalf("ListThreads: %v", err)
	}
	var got []string
	for _, th := range list {
		got = append(got, th.ID)
		if th.Cwd != dir || th.UpdatedAt.IsZero() {
			t.Errorf("listed thread %+v: want cwd %s and a time", th, dir)
		}
	}
	if len(got) != 2 || got[0] != ids[2] || got[1] != ids[0] {
		t.Fatalf("ListThreads(%s) = %v, want [%s %s] (newest first)", dir, got, ids[2], ids[0])
	}
	if list[0].Preview != "second in dir" {
		t.Errorf("preview = %q, want the first user message", list[0].Preview)
	}
}

// gitRepo makes a repository with one commit.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", ".")
	run("commit", "-q", "-m", "start")
	return dir
}
