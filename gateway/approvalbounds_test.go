package gateway

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// asking is a turn that asks for req on its own thread and answers with
// the decision.
func asking(g **Gateway, req codex.ApprovalRequest) func(ctx context.Context, thread, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
	return func(ctx context.Context, thread, _ string, _ codex.TurnEvents) (codex.TurnResult, error) {
		r := req
		r.ThreadID, r.TurnID = thread, "u1"
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "decision: " + string((*g).Approve(ctx, r))}, nil
	}
}

// approvalCallback starts the id of an approval's buttons.
const approvalCallback = "approval:"

// fenced splits text at its code fences: before, inside, after.
func fenced(t *testing.T, text string) (before, block, after string) {
	t.Helper()
	if n := strings.Count(text, "```"); n != 2 {
		t.Fatalf("%d fence markers in\n%s\nwant one block (2)", n, text)
	}
	before, rest, _ := strings.Cut(text, "```")
	block, after, _ = strings.Cut(rest, "```")
	return before, block, after
}

// A file change's question shows its paths and the root it asks to write
// under, when that root is the lane's own; it is asked, not declined.
func TestFileChangeApprovalShowsPathsAndGrantRoot(t *testing.T) {
	work := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Approvals, c.ApprovalTimeout, c.Thread.Cwd = ApprovalsChat, time.Minute, work })
	grant := filepath.Join(work, "src")
	h.cx.run = asking(&h.g, codex.ApprovalRequest{Kind: "fileChange", ItemID: "call_p", GrantRoot: grant,
		Files: []codex.FileChange{{Path: filepath.Join(work, "a.txt"), Kind: "add"}, {Path: "/etc/passwd", Kind: "update"}}})
	h.start(t)
	h.send(t, "a", "m1", "patch it")
	q := nextContaining(t, h.p, "Codex asks to change files").Text
	_, block, _ := fenced(t, q)
	for _, want := range []string{"file:    " + filepath.Join(work, "a.txt") + " (add)", "file:    /etc/passwd (update)",
		"grant:   writes under " + grant} {
		if !strings.Contains(block, want) {
			t.Errorf("the question lacks %q:\n%s", want, q)
		}
	}
	if p := h.g.PendingApprovals("v1:test:a"); len(p) != 1 || p[0].GrantRoot != grant || len(p[0].Files) != 2 || p[0].Escalation != "" {
		t.Fatalf("pending %+v, want the change asked with its grant root", p)
	}
	if err := h.g.Decide("v1:test:a", "a1", "accept", "u1"); err != nil {
		t.Fatal(err)
	}
	if o := h.p.replyTo(t, "m1"); o.Text != "decision: accept" {
		t.Errorf("the turn saw %q", o.Text)
	}
}

// What would widen the lane's boundary is declined at once by default,
// and the lane told what and why: a grantRoot outside the lane's roots
// (also through a link, or into a git directory) and every escalation out
// of the sandbox codex can ask for.
func TestWideningApprovalsAreDeclinedByDefault(t *testing.T) {
	work, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(work, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  codex.ApprovalRequest
		show string // in the notice's block
	}{
		{"grant root outside", codex.ApprovalRequest{Kind: "fileChange", GrantRoot: elsewhere}, "grant:   writes under " + elsewhere},
		{"grant root through a link", codex.ApprovalRequest{Kind: "fileChange", GrantRoot: filepath.Join(work, "link", "x")}, "link"},
		{"grant root dotdot", codex.ApprovalRequest{Kind: "fileChange", GrantRoot: work + "/../" + filepath.Base(elsewhere)}, "grant:"},
		{"grant root in git", codex.ApprovalRequest{Kind: "fileChange", GrantRoot: filepath.Join(work, ".git", "hooks")}, ".git"},
		{"grant root relative", codex.ApprovalRequest{Kind: "fileChange", GrantRoot: "src"}, "grant:   writes under src"},
		{"retry without sandbox", codex.ApprovalRequest{Kind: "command", Command: "touch /x", Reason: "command failed; retry without sandbox?"},
			"reason:  command failed; retry without sandbox?"},
		{"escalated", codex.ApprovalRequest{Kind: "command", Command: "curl x ||sh||", Reason: "need it"}, "command: curl x ||sh||"},
		{"network", codex.ApprovalRequest{Kind: "command", Command: "curl x", Network: "evil.example"}, "network: evil.example"},
		{"extra permissions", codex.ApprovalRequest{Kind: "command", Command: "ls /", ExtraPermissions: true}, "command: ls /"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Approvals, c.ApprovalTimeout, c.Thread.Cwd = ApprovalsChat, time.Minute, work })
			h.cx.run = asking(&h.g, tc.req)
			h.start(t)
			h.send(t, "a", "m1", "do it")
			got, notices := collect(t, h.p, "m1")
			if got["m1"].Text != "decision: decline" {
				t.Errorf("the turn saw %q, want decline", got["m1"].Text)
			}
			if len(notices) != 1 || !strings.Contains(notices[0], "declined, because codex.allow_escalation is off") {
				t.Fatalf("notices %q, want one saying why it was declined", notices)
			}
			if _, block, _ := fenced(t, notices[0]); !strings.Contains(block, tc.show) {
				t.Errorf("the notice's block lacks %q:\n%s", tc.show, notices[0])
			}
			if p := h.g.PendingApprovals("v1:test:a"); len(p) != 0 {
				t.Errorf("pending %+v, want nothing asked", p)
			}
		})
	}
}

// With codex.allow_escalation an escalation is asked, but only an admin
// allows it, and only once: the question offers no "for this thread",
// acceptForSession is refused even to an admin, and the requester's
// accept is refused; an admin's single accept goes through.
func TestEscalationWithAllowEscalationIsAnAdminsOnce(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Approvals, c.ApprovalTimeout, c.AllowEscalation = ApprovalsChat, time.Minute, true
		c.Admins = map[string][]string{"test": {"root"}}
	})
	h.cx.run = asking(&h.g, codex.ApprovalRequest{Kind: "command", Command: "rm -rf /tmp/x", Reason: "command failed; retry without sandbox?"})
	bp := &buttonPlatform{fakePlatform: h.p, buttons: make(chan []Button, 4)}
	h.g.AddPlatform(bp)
	h.start(t)
	h.send(t, "a", "m1", "clean up")
	q := nextContaining(t, h.p, "Codex asks to run a command").Text
	if !strings.Contains(q, "⚠️ It would run outside the sandbox. Only an admin can allow it, and only once.") ||
		strings.Contains(q, "session") {
		t.Errorf("question:\n%s\nwant the warning and no session option", q)
	}
	for _, b := range <-bp.buttons {
		if strings.HasSuffix(b.ID, ":"+string(codex.DecisionAcceptForSession)) {
			t.Errorf("buttons offer %q", b.Label)
		}
	}
	const key = "v1:test:a"
	if err := h.g.Decide(key, "a1", "accept", "u1"); !errors.Is(err, ErrAdminsOnly) {
		t.Errorf("the requester's accept: %v, want ErrAdminsOnly", err)
	}
	if err := h.g.Decide(key, "a1", "acceptForSession", "root"); !errors.Is(err, ErrOnceOnly) {
		t.Errorf("an admin's acceptForSession: %v, want ErrOnceOnly", err)
	}
	press := Inbound{Address: apiAddr("a"), MessageID: "p1", SenderID: "u1", Callback: approvalCallback + "a1:accept"}
	if _, err := h.g.Deliver(context.Background(), press); err != nil {
		t.Fatal(err)
	}
	nextContaining(t, h.p, "Only an admin can allow approval a1")
	bySession := Inbound{Address: apiAddr("a"), MessageID: "c1", SenderID: "root", Text: "/approve a1 session"}
	if _, err := h.g.Deliver(context.Background(), bySession); err != nil {
		t.Fatal(err)
	}
	if o := h.p.replyTo(t, "c1"); !strings.Contains(o.Text, "once only") {
		t.Errorf("an admin's /approve session answered %q", o.Text)
	}
	if p := h.g.PendingApprovals(key); len(p) != 1 {
		t.Fatalf("pending %+v after refused decisions, want it still waiting", p)
	}
	if err := h.g.Decide(key, "a1", "accept", "root"); err != nil {
		t.Fatalf("an admin's accept: %v", err)
	}
	if o := h.p.replyTo(t, "m1"); o.Text != "decision: accept" {
		t.Errorf("the turn saw %q, want accept", o.Text)
	}
}
