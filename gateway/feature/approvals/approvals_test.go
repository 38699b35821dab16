package approvals

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// chatHost is a host with chat approvals and the lane of thread "t1".
func chatHost(t *testing.T) (*exttest.Host, *exttest.Lane, ext.Approvals) {
	return chatHostTimeout(t, time.Minute)
}

// chatHostTimeout is chatHost whose requests are declined after timeout.
func chatHostTimeout(t *testing.T, timeout time.Duration) (*exttest.Host, *exttest.Lane, ext.Approvals) {
	h := exttest.NewHost(t)
	h.Settings = ext.RequestSettings{Approvals: "chat", ApprovalTimeout: timeout}
	l := &exttest.Lane{Addr: chat.Address{Platform: "api", Kind: chat.LaneDM, ChatID: "a"}}
	h.Threads = map[string]ext.Lane{"t1": l}
	h.Asked = make(chan ext.Prompt, 1)
	h.Register(t, New())
	return h, l, h.Approvals()
}

// approving runs Approve for req on its own goroutine; the decision
// arrives on the channel.
func approving(ctx context.Context, a ext.Approvals, req codex.ApprovalRequest) <-chan codex.Decision {
	out := make(chan codex.Decision, 1)
	go func() { out <- a.Approve(ctx, req) }()
	return out
}

func TestApprovedByTheLanesCommand(t *testing.T) {
	ctx := t.Context()
	h, l, a := chatHost(t)
	decided := approving(ctx, a, codex.ApprovalRequest{Kind: "command", Command: "ls", ThreadID: "t1"})
	p := <-h.Asked
	if p.Approval == nil || p.Approval.ID != "a1" || len(p.Buttons) != 4 || !strings.Contains(p.Text, "/approve a1") {
		t.Fatalf("the question: %+v", p)
	}
	if got := a.PendingApprovals(l.Key()); len(got) != 1 || got[0].Command != "ls" {
		t.Fatalf("pending: %+v", got)
	}
	h.Run(ctx, l, "approve", "", "m9")
	if d := <-decided; d != codex.DecisionAccept {
		t.Fatalf("decision %q, want accept", d)
	}
	if n := h.Notices(); len(n) != 1 || n[0].Text != "Approval a1: approved once." || n[0].ReplyTo != "m9" {
		t.Errorf("notices: %+v", n)
	}
	if err := a.Decide(l.Key(), "a1", "accept", "u1"); !errors.Is(err, ext.ErrApprovalNotFound) {
		t.Errorf("a second decision: %v, want ErrApprovalNotFound", err)
	}
}

func TestStoppedLaneCancelsItsApprovals(t *testing.T) {
	h, l, a := chatHost(t)
	decided := approving(t.Context(), a, codex.ApprovalRequest{Kind: "fileChange", ThreadID: "t1"})
	<-h.Asked
	h.Stop(l.Key())
	if d := <-decided; d != codex.DecisionCancel {
		t.Fatalf("decision %q, want cancel", d)
	}
}

func TestDeclinedWithoutChatOrLane(t *testing.T) {
	h, _, a := chatHost(t)
	if d := a.Approve(t.Context(), codex.ApprovalRequest{Kind: "command", ThreadID: "nobody's"}); d != codex.DecisionDecline {
		t.Errorf("a thread no lane owns: %q, want decline", d)
	}
	never := exttest.NewHost(t)
	never.Settings.Approvals = "never"
	never.Register(t, New())
	if d := never.Approvals().Approve(t.Context(), codex.ApprovalRequest{Kind: "command", ThreadID: "t1"}); d != codex.DecisionDecline {
		t.Errorf("codex.approvals never: %q, want decline", d)
	}
	if len(h.Prompts()) != 0 || len(h.Notices()) != 0 {
		t.Errorf("asked %v, told %v; want nothing", h.Prompts(), h.Notices())
	}
}

func TestUnsupportedIsToldToItsLaneOnly(t *testing.T) {
	h, l, a := chatHost(t)
	a.Unsupported("nobody's", "item/tool/call")
	a.Unsupported("t1", "mcpServer/elicitation/request")
	n := h.Notices()
	if len(n) != 1 || n[0].Addr != l.Addr || !strings.Contains(n[0].Text, "information for an MCP server") {
		t.Errorf("notices: %+v", n)
	}
}

// A grant is within the lane's roots only once links are resolved, and
// never inside a git directory.
func TestWithinResolvesLinksAndRefusesGit(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	if err := os.Symlink(out, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		filepath.Join(root, "sub", "new"):    true,
		filepath.Join(root, "link", "x"):     false,
		filepath.Join(root, ".git", "hooks"): false,
		filepath.Join(root, "..", "x"):       false,
		"relative":                           false,
	} {
		if got := within(path, []string{root}); got != want {
			t.Errorf("within(%q) = %v, want %v", path, got, want)
		}
	}
}

// decidedPrompt runs one request in a host with chat approvals and the
// given timeout, lets settle decide it once asked, and returns the
// decision and the edits of the prompt.
func decidedPrompt(t *testing.T, timeout time.Duration, settle func(ctx context.Context, cancel context.CancelFunc, h *exttest.Host, l *exttest.Lane, a ext.Approvals)) (codex.Decision, []string, ext.Prompt) {
	t.Helper()
	h, l, a := chatHostTimeout(t, timeout)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	decided := approving(ctx, a, codex.ApprovalRequest{Kind: "command", Command: "ls", ThreadID: "t1"})
	p := <-h.Asked
	settle(t.Context(), cancel, h, l, a)
	return <-decided, h.Edits(), p
}

// A decided, timed-out, withdrawn or stopped request's prompt is edited
// once to its question and what became of it (the buttons go with the
// edit); the notices stay.
func TestDecidedPromptIsEditedOnce(t *testing.T) {
	never := func(context.Context, context.CancelFunc, *exttest.Host, *exttest.Lane, ext.Approvals) {}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		settle  func(ctx context.Context, cancel context.CancelFunc, h *exttest.Host, l *exttest.Lane, a ext.Approvals)
		want    codex.Decision
		mark    string
	}{
		{"approved by command", time.Minute, func(ctx context.Context, _ context.CancelFunc, h *exttest.Host, l *exttest.Lane, _ ext.Approvals) {
			h.Run(ctx, l, "approve", "session", "m9")
		}, codex.DecisionAcceptForSession, "✅ Approved for this thread by User"},
		{"declined by an adapter", time.Minute, func(_ context.Context, _ context.CancelFunc, _ *exttest.Host, l *exttest.Lane, a ext.Approvals) {
			if err := a.Decide(l.Key(), "a1", "decline", "u2"); err != nil {
				t.Errorf("decide: %v", err)
			}
		}, codex.DecisionDecline, "❌ Declined by u2"},
		{"timed out", time.Nanosecond, never, codex.DecisionDecline, "❌ Declined: no answer within 1ns"},
		{"withdrawn", time.Hour, func(_ context.Context, cancel context.CancelFunc, _ *exttest.Host, _ *exttest.Lane, _ ext.Approvals) {
			cancel()
		}, codex.DecisionDecline, "⏹ Withdrawn: the turn ended before an answer"},
		{"stopped", time.Hour, func(_ context.Context, _ context.CancelFunc, h *exttest.Host, l *exttest.Lane, _ ext.Approvals) {
			h.Stop(l.Key())
		}, codex.DecisionCancel, "⏹ Cancelled: the reply was stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, edits, p := decidedPrompt(t, tc.timeout, tc.settle)
			if d != tc.want {
				t.Errorf("decision %q, want %q", d, tc.want)
			}
			if want := "m1: " + p.Text + "\n" + tc.mark; len(edits) != 1 || edits[0] != want {
				t.Errorf("edits %q, want one: %q", edits, want)
			}
		})
	}
}
