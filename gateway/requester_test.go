package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Every turn carries its requester: in a shared room what a
// turn asks is decided by whoever caused it, or an admin; a turn nobody
// is known to have caused is decided by admins only.

var room = Address{Platform: "test", Kind: LaneGroup, ChatID: "g1"}

// roomHarness is a gateway asking chat approvals, with "root" an admin
// of the test platform, whose turns ask for one command approval.
func roomHarness(t *testing.T, st *fakeStore, opts ...harnessOpt) *harness {
	t.Helper()
	h := newHarnessOn(t, st, append([]harnessOpt{func(c *Config) {
		c.Approvals, c.ApprovalTimeout = ApprovalsChat, time.Minute
		c.Admins = map[string][]string{"test": {"root"}}
	}}, opts...)...)
	h.cx.run = approvalRun(&h.g)
	return h
}

// inRoom delivers a message or a button press from sender to the room.
func (h *harness) inRoom(t *testing.T, in Inbound) {
	t.Helper()
	in.Address, in.Mentioned = room, true
	if _, err := h.g.Deliver(context.Background(), in); err != nil {
		t.Fatalf("Deliver(%s): %v", in.MessageID, err)
	}
}

// onlyDecides checks the room's pending approval a1: the stranger's
// press is refused with refusal and leaves it pending; the decider's
// press accepts it, and the turn sees the accept.
func (h *harness) onlyDecides(t *testing.T, stranger, decider, refusal string) {
	t.Helper()
	question(t, h.p)
	h.inRoom(t, Inbound{MessageID: "p1", SenderID: stranger, Callback: approvalCallback + "a1:accept"})
	nextContaining(t, h.p, refusal)
	if p := h.g.PendingApprovals(room.SessionKey()); len(p) != 1 {
		t.Fatalf("pending %+v after the stranger's press, want a1 still waiting", p)
	}
	h.inRoom(t, Inbound{MessageID: "p2", SenderID: decider, Callback: approvalCallback + "a1:accept"})
	nextContaining(t, h.p, "decision: accept")
}

// leaveCutOffInRoom leaves the room's turn of sender's message text cut
// off by a crash, as the last process would have.
func leaveCutOffInRoom(t *testing.T, st *fakeStore, sender, name, text string) {
	t.Helper()
	ctx := context.Background()
	la, err := st.EnsureLane(ctx, laneKey(room))
	if err != nil {
		t.Fatal(err)
	}
	in, _, err := st.RecordInbound(ctx, store.Inbound{Platform: "test", MessageID: "cut-1", SessionKey: room.SessionKey(),
		SenderID: sender, SenderName: name, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.JournalTurn(ctx, store.JournalEntry{SessionKey: room.SessionKey(), Generation: la.Generation, InboundID: in, Text: text}); err != nil {
		t.Fatal(err)
	}
}

// A /retry turn is the /retry sender's: the message's author pressing on
// its approval is refused.
func TestRetryTurnIsTheRetriersInARoom(t *testing.T) {
	st := newFakeStore()
	leaveCutOffInRoom(t, st, "ana", "Ana", "cut job")
	h := roomHarness(t, st)
	h.start(t)
	h.inRoom(t, Inbound{MessageID: "r1", SenderID: "ben", DisplayName: "Ben", Text: "/retry"})
	h.onlyDecides(t, "ana", "ben", "Only Ben or an admin can decide this; approval a1 is still waiting.")
}

// A /review turn is the reviewer's.
func TestReviewTurnIsTheReviewersInARoom(t *testing.T) {
	h := roomHarness(t, newFakeStore())
	h.cx.reviewFn = func(ctx context.Context, thread string, _ codex.ReviewTarget, ev codex.TurnEvents) (codex.TurnResult, error) {
		return approvalRun(&h.g)(ctx, thread, "", ev)
	}
	h.start(t)
	h.inRoom(t, Inbound{MessageID: "v1", SenderID: "ana", DisplayName: "Ana", Text: "/review"})
	h.onlyDecides(t, "ben", "ana", "Only Ana or an admin can decide this; approval a1 is still waiting.")
}

// A turn rerun after a restart (codex.auto_retry_cut_off) is still its
// message's sender's, read back from the inbound row.
func TestRecoveredTurnIsItsSendersInARoom(t *testing.T) {
	st := newFakeStore()
	leaveCutOffInRoom(t, st, "ana", "Ana", "cut job")
	h := roomHarness(t, st, func(c *Config) { c.AutoRetryCutOff = true })
	h.start(t)
	h.onlyDecides(t, "ben", "ana", "Only Ana or an admin can decide this; approval a1 is still waiting.")
}

// A schedule's firing is its maker's.
func TestScheduledTurnIsItsMakersInARoom(t *testing.T) {
	h := roomHarness(t, newFakeStore())
	h.start(t)
	h.inRoom(t, Inbound{MessageID: "s1", SenderID: "ana", DisplayName: "Ana", Text: "/at 10m check the build"})
	nextContaining(t, h.p, "Scheduled s1")
	h.clock.Advance(10 * time.Minute)
	h.fireNow()
	h.onlyDecides(t, "ben", "ana", "Only Ana or an admin can decide this; approval a1 is still waiting.")
}

// A turn whose requester is not known (a row from before requesters were
// kept) is decided by admins only in a shared room: the question says
// so, and a member's press is refused.
func TestUnknownRequesterInARoomIsDecidedByAdminsOnly(t *testing.T) {
	st := newFakeStore()
	leaveCutOffInRoom(t, st, "", "", "cut job")
	h := roomHarness(t, st, func(c *Config) { c.AutoRetryCutOff = true })
	h.start(t)
	if q := nextContaining(t, h.p, "Codex asks to run a command").Text; !strings.Contains(q, "Who asked for this turn is not known: only an admin decides.") {
		t.Errorf("question:\n%s\nwant it to say only an admin decides", q)
	}
	h.inRoom(t, Inbound{MessageID: "p1", SenderID: "ben", Callback: approvalCallback + "a1:accept"})
	nextContaining(t, h.p, "Only an admin can decide this (who asked for this turn is not known); approval a1 is still waiting.")
	if err := h.g.Decide(room.SessionKey(), "a1", "decline", "ben"); err == nil {
		t.Error("a member's decline of an unknown requester's approval went through")
	}
	h.inRoom(t, Inbound{MessageID: "p2", SenderID: "root", Callback: approvalCallback + "a1:accept"})
	nextContaining(t, h.p, "decision: accept")
}
