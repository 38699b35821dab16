package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// buttonPlatform is the fake platform with the ButtonSender capability.
type buttonPlatform struct {
	*fakePlatform
	buttons chan []Button
}

func (p *buttonPlatform) SendButtons(ctx context.Context, out Outbound, b []Button) (string, error) {
	p.buttons <- b
	return p.Send(ctx, out)
}

// approvalRun is a turn that asks for one command approval and answers
// with the decision.
func approvalRun(g **Gateway) func(ctx context.Context, thread, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
	return func(ctx context.Context, thread, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		d := (*g).Approve(ctx, codex.ApprovalRequest{Kind: "command", ThreadID: thread, TurnID: "u1", ItemID: "call_1",
			Command: "/bin/bash -lc 'touch marker'", Cwd: "/work"})
		status := codex.TurnCompleted
		if d == codex.DecisionCancel {
			status = codex.TurnInterrupted
		}
		return codex.TurnResult{Status: status, Text: "decision: " + string(d)}, nil
	}
}

func newApprovalHarness(t *testing.T, buttons bool, timeout time.Duration) (*harness, *buttonPlatform) {
	h := newHarness(t, func(c *Config) { c.Approvals = ApprovalsChat; c.ApprovalTimeout = timeout })
	h.cx.run = approvalRun(&h.g)
	var bp *buttonPlatform
	if buttons {
		bp = &buttonPlatform{fakePlatform: h.p, buttons: make(chan []Button, 4)}
		h.g.AddPlatform(bp) // replaces the plain fake of the same name
	}
	h.start(t)
	return h, bp
}

// question waits for the approval question sent to the lane.
func question(t *testing.T, p *fakePlatform) string {
	t.Helper()
	for {
		if o := p.next(t); strings.Contains(o.Text, "Codex asks to run a command") {
			if o.Approval == nil || o.Approval.ID == "" || o.Approval.Command == "" {
				t.Errorf("question carries approval %+v, want the pending request", o.Approval)
			}
			return o.Text
		}
	}
}

func TestApprovalByButton(t *testing.T) {
	h, bp := newApprovalHarness(t, true, time.Minute)
	h.send(t, "a", "m1", "please run it")
	q := question(t, h.p)
	if !strings.Contains(q, "command: /bin/bash -lc 'touch marker'") || !strings.Contains(q, "in:      /work") {
		t.Errorf("question lacks what/where:\n%s", q)
	}
	b := <-bp.buttons
	if len(b) != 4 || b[0].Label != "Approve" || b[1].Label != "Approve for this thread" || b[2].Label != "Decline" {
		t.Fatalf("buttons %+v", b)
	}
	if p := h.g.PendingApprovals("v1:test:a"); len(p) != 1 || p[0].ItemID != "call_1" {
		t.Fatalf("pending %+v", p)
	}
	// A press in another lane is refused; the request stays pending.
	other := Inbound{Address: apiAddr("b"), MessageID: "x", SenderID: "u2", Callback: b[0].ID}
	if _, err := h.g.Deliver(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if o := h.p.next(t); !strings.Contains(o.Text, "belongs to another conversation") {
		t.Errorf("foreign press answered %q", o.Text)
	}
	if err := h.g.Decide("v1:test:b", "a1", "accept", "u2"); !errors.Is(err, ErrApprovalWrongLane) {
		t.Errorf("Decide from another lane: %v", err)
	}
	press := Inbound{Address: apiAddr("a"), MessageID: "y", SenderID: "u1", Callback: b[1].ID}
	if _, err := h.g.Deliver(context.Background(), press); err != nil {
		t.Fatal(err)
	}
	got, notices := collect(t, h.p, "m1")
	if got["m1"].Text != "decision: acceptForSession" {
		t.Errorf("turn saw %q", got["m1"].Text)
	}
	if len(notices) != 1 || notices[0] != "Approval a1: approved for this thread." {
		t.Errorf("notices %q", notices)
	}
	// Answered once: a second press finds nothing pending.
	if err := h.g.Decide("v1:test:a", "a1", "decline", "u1"); !errors.Is(err, ErrApprovalNotFound) {
		t.Errorf("second decision: %v", err)
	}
}

func TestApprovalByTextCommands(t *testing.T) {
	tests := []struct{ name, command, want string }{
		{"approve", "/approve", "decision: accept"},
		{"approve session with id", "/approve a1 session", "decision: acceptForSession"},
		{"deny", "/deny a1", "decision: decline"},
		{"stop cancels", "/stop", "decision: cancel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newApprovalHarness(t, false, time.Minute)
			h.send(t, "a", "m1", "please run it")
			if q := question(t, h.p); !strings.Contains(q, "/approve a1") || !strings.Contains(q, "/deny a1") {
				t.Errorf("text question lacks the commands:\n%s", q)
			}
			h.send(t, "a", "c1", tc.command)
			got, _ := collect(t, h.p, "m1", "c1")
			if got["m1"].Text != tc.want && !strings.HasPrefix(got["m1"].Text, tc.want) {
				t.Errorf("turn saw %q, want %q (command answered %q)", got["m1"].Text, tc.want, got["c1"].Text)
			}
			if p := h.g.PendingApprovals("v1:test:a"); len(p) != 0 {
				t.Errorf("still pending %+v", p)
			}
		})
	}
}

func TestApprovalTimesOutDeclined(t *testing.T) {
	h, _ := newApprovalHarness(t, false, 30*time.Millisecond)
	h.send(t, "a", "m1", "please run it")
	got, notices := collect(t, h.p, "m1")
	if got["m1"].Text != "decision: decline" {
		t.Errorf("turn saw %q", got["m1"].Text)
	}
	told := false
	for _, n := range notices {
		told = told || strings.Contains(n, "No answer to approval a1 within 30ms: declined")
	}
	if !told {
		t.Errorf("notices %q lack the timeout notice", notices)
	}
	h.send(t, "a", "c1", "/approve a1")
	if o := h.p.replyTo(t, "c1"); !strings.Contains(o.Text, "no longer pending") {
		t.Errorf("late approve answered %q", o.Text)
	}
}

func TestApprovalWithoutChatOrLaneDeclines(t *testing.T) {
	h := newHarness(t)
	if d := h.g.Approve(context.Background(), codex.ApprovalRequest{Kind: "command", ThreadID: "t1"}); d != codex.DecisionDecline {
		t.Errorf("approvals never: %q", d)
	}
	hc, _ := newApprovalHarness(t, false, time.Minute)
	if d := hc.g.Approve(context.Background(), codex.ApprovalRequest{Kind: "command", ThreadID: "nobody"}); d != codex.DecisionDecline {
		t.Errorf("unknown thread: %q", d)
	}
	if _, err := New(Config{Approvals: "sometimes"}.WithDefaults(), newFakeStore(), newFakeCodex()); err == nil {
		t.Error("unknown approvals mode accepted")
	}
}

// A server request codex refused (not an approval gatewayd can ask about)
// is told to the lane owning the thread, once per request, in any
// approvals mode; a thread no lane owns tells nobody.
func TestUnsupportedRequestIsToldToTheLane(t *testing.T) {
	h := newHarness(t)
	h.cx.run = func(_ context.Context, thread, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		h.g.Unsupported(thread, "item/permissions/requestApproval")
		h.g.Unsupported(thread, "item/tool/requestUserInput")
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "done without it"}, nil
	}
	h.start(t)
	h.g.Unsupported("nobody", "item/permissions/requestApproval")
	h.send(t, "a", "m1", "needs more rights")
	got, notices := collect(t, h.p, "m1")
	if got["m1"].Text != "done without it" {
		t.Errorf("reply %q", got["m1"].Text)
	}
	want := []string{
		"Codex asked for extra permissions (item/permissions/requestApproval), which gatewayd cannot grant here; it was declined.",
		"Codex asked for input from you (item/tool/requestUserInput), which gatewayd cannot grant here; it was declined.",
	}
	if strings.Join(notices, "\n") != strings.Join(want, "\n") {
		t.Errorf("notices\n%q\nwant\n%q", notices, want)
	}
}

// When codex withdraws a request (its turn ended), the lane is told, and a
// late /approve finds nothing pending.
func TestWithdrawnApprovalIsToldToTheLane(t *testing.T) {
	h, _ := newApprovalHarness(t, false, time.Minute)
	withdraw := make(chan struct{})
	ask := approvalRun(&h.g)
	h.cx.run = func(ctx context.Context, thread, text string, ev codex.TurnEvents) (codex.TurnResult, error) {
		actx, cancel := context.WithCancel(ctx)
		go func() { <-withdraw; cancel() }()
		return ask(actx, thread, text, ev)
	}
	h.send(t, "a", "m1", "please run it")
	question(t, h.p)
	close(withdraw)
	got, notices := collect(t, h.p, "m1")
	if got["m1"].Text != "decision: decline" {
		t.Errorf("turn saw %q", got["m1"].Text)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "a1 was withdrawn") {
		t.Errorf("notices %q, want the withdrawal", notices)
	}
	if err := h.g.Decide("v1:test:a", "a1", "accept", "u1"); !errors.Is(err, ErrApprovalNotFound) {
		t.Errorf("late decision: %v", err)
	}
}

// TestApprovalInASharedRoomIsTheRequesters: in a group, the approval a
// turn asks for is decided by the member whose message started it or by
// an admin; anyone else's press (or /approve) is refused and changes
// nothing. With codex.approvers: anyone, any allowed member decides.
func TestApprovalInASharedRoomIsTheRequesters(t *testing.T) {
	group := Address{Platform: "test", Kind: LaneGroup, ChatID: "g1"}
	for _, tc := range []struct {
		name, approvers, presser string
		refused                  bool
	}{
		{"another member", "requester", "ben", true},
		{"the requester", "requester", "ana", false},
		{"an admin", "requester", "root", false},
		{"anyone allowed", "anyone", "ben", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.Approvals, c.ApprovalTimeout, c.Approvers = ApprovalsChat, time.Minute, tc.approvers
				c.Admins = map[string][]string{"test": {"root"}}
			})
			h.cx.run = approvalRun(&h.g)
			h.start(t)
			ctx := context.Background()
			if _, err := h.g.Deliver(ctx, Inbound{Address: group, MessageID: "m1", SenderID: "ana", DisplayName: "Ana", Text: "run it"}); err != nil {
				t.Fatal(err)
			}
			question(t, h.p)
			press := func(id, who string) {
				t.Helper()
				if _, err := h.g.Deliver(ctx, Inbound{Address: group, MessageID: id, SenderID: who, Callback: approvalCallback + "a1:accept"}); err != nil {
					t.Fatal(err)
				}
			}
			press("p1", tc.presser)
			if tc.refused {
				if o := h.p.next(t); o.Text != "Only Ana or an admin can decide this; approval a1 is still waiting." {
					t.Fatalf("a non-requester's press answered %q", o.Text)
				}
				if err := h.g.Decide(group.SessionKey(), "a1", "accept", "ben"); !errors.Is(err, ErrNotApprover) {
					t.Fatalf("Decide by a non-requester: %v", err)
				}
				if p := h.g.PendingApprovals(group.SessionKey()); len(p) != 1 || p[0].Requester != "ana" {
					t.Fatalf("after a refused press pending %+v, want the request still Ana's", p)
				}
				press("p2", "ana")
			}
			if got, _ := collect(t, h.p, "m1"); got["m1"].Text != "decision: accept" {
				t.Errorf("the turn saw %q, want accept", got["m1"].Text)
			}
		})
	}
}
