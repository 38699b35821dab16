// Package approvals is chat approvals and the notices about the server
// requests gatewayd refuses.
package approvals

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// Chat approvals (Config.Approvals "chat"): a command-execution or
// file-change approval request from the app-server becomes a question in the
// lane that owns the thread, with buttons where the platform has them and
// the text commands /approve and /deny everywhere. Only a decision from the
// same lane counts (the platform's Authorizer already admitted the sender);
// each request is answered exactly once; an unanswered one is declined after
// ApprovalTimeout and the lane is told; /stop and /reset cancel the lane's
// pending requests. Codex itself never times a request out (docs/codex-app-server.md §10.1).

// callbackPrefix starts the Button.ID of approval buttons:
// "approval:<id>:<decision>".
const callbackPrefix = "approval:"

type pendingApproval struct {
	info     chat.PendingApproval
	platform string       // the lane's, for its admins
	answer   chan verdict // buffered: written once, by whoever took the entry
}

// verdict is a decision and who made it ("" for a stopped lane), for the
// mark on the prompt.
type verdict struct {
	decision codex.Decision
	by       string
}

// approvalBook holds the pending approvals; the zero value is ready.
type approvalBook struct {
	mu      sync.Mutex
	seq     int64
	pending map[string]*pendingApproval
}

func (b *approvalBook) add(info chat.PendingApproval) *pendingApproval {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending == nil {
		b.pending = make(map[string]*pendingApproval)
	}
	b.seq++
	info.ID = "a" + strconv.FormatInt(b.seq, 10)
	p := &pendingApproval{info: info, answer: make(chan verdict, 1)}
	b.pending[info.ID] = p
	return p
}

func (b *approvalBook) get(id string) *pendingApproval {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pending[id]
}

// take removes the entry; only the caller that took it may answer it.
func (b *approvalBook) take(id string) *pendingApproval {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pending[id]
	delete(b.pending, id)
	return p
}

// lane lists a lane's pending approvals, oldest first.
func (b *approvalBook) lane(key string) []*pendingApproval {
	b.mu.Lock()
	defer b.mu.Unlock()
	return ext.OfLane(b.pending, key, func(p *pendingApproval) (string, string) { return p.info.SessionKey, p.info.ID })
}

// approvals is chat approvals and the notices about server requests
// gatewayd refuses: it owns the book of pending requests, asks the lane
// owning a request's thread, and takes the lane's decision from a button,
// /approve and /deny, or an adapter (Decide).
type approvals struct {
	mode    string        // codex.approvals
	timeout time.Duration // codex.approval_timeout
	book    approvalBook
	// allowEscalation is codex.allow_escalation; roots are each lane's
	// directories as its latest turn was given them (the input hook).
	allowEscalation bool
	roots           laneRoots

	h   ext.Host
	log *zap.Logger
}

// New is the approvals feature.
func New() ext.Feature { return &approvals{} }

func (a *approvals) Name() string { return "approvals" }

// Register adds /approve, /deny, the approval buttons, takes Codex's
// approval requests, keeps each turn's roots, and cancels a lane's
// pending requests when its turn is stopped or its conversation reset.
func (a *approvals) Register(h ext.Host) error {
	set := h.RequestSettings()
	a.mode, a.timeout, a.allowEscalation = set.Approvals, set.ApprovalTimeout, set.AllowEscalation
	a.h, a.log = h, h.Logger()
	decide := func(ctx context.Context, c ext.Call) bool {
		a.command(ctx, c.Lane.Address(), c.MsgID, c.Sender, shownName(c.SenderName, c.Sender), c.Args, c.Name == "approve")
		return true
	}
	h.Command(ext.Command{Name: "approve", Args: "[id] [session]", Description: "Allow what Codex asked for", Run: decide})
	h.Command(ext.Command{Name: "deny", Args: "[id]", Description: "Refuse what Codex asked for", Run: decide})
	h.Callback(callbackPrefix, a.pressed)
	h.OnStopped(func(key string) { a.cancel(key) })
	// The features' input hooks run in their order: the roots are right
	// only when this feature registers after those adding any (confine).
	h.OnInput(func(_ context.Context, t ext.Turn, in *codex.TurnInput) { a.noteRoots(t.Lane().Key(), in) })
	h.HandleApprovals(a)
	return nil
}

// noteRoots keeps the roots the lane's turn really gets: what turn/start
// sends once every input hook ran (confinement and worktrees add them).
func (a *approvals) noteRoots(sessionKey string, in *codex.TurnInput) {
	a.roots.set(sessionKey, turnRoots(in))
}

// PendingApprovals lists the lane's requests waiting for a decision.
func (a *approvals) PendingApprovals(sessionKey string) []chat.PendingApproval {
	var out []chat.PendingApproval
	for _, p := range a.book.lane(sessionKey) {
		out = append(out, p.info)
	}
	return out
}

// Approve asks the lane owning req.ThreadID and waits for its decision,
// the timeout or ctx (the app-server went away).
func (a *approvals) Approve(ctx context.Context, req codex.ApprovalRequest) codex.Decision {
	if a.mode != config.ApprovalsChat {
		a.log.Warn("approval.declined", zap.String("why", "approvals are not chat"), zap.String("thread", req.ThreadID))
		return codex.DecisionDecline
	}
	l, ok := a.h.LaneOfThread(req.ThreadID)
	if !ok {
		a.log.Warn("approval.declined", zap.String("why", "no lane owns the thread"), zap.String("thread", req.ThreadID))
		return codex.DecisionDecline
	}
	addr := l.Address()
	key := addr.SessionKey()
	if req.Kind != "command" && req.Kind != "fileChange" {
		a.log.Warn("approval.declined", zap.String("why", "unsupported kind"), zap.String("kind", req.Kind))
		a.h.Notify(a.base(), addr, "", fmt.Sprintf("Codex asked for a %q approval, which this gateway cannot grant; declined.", req.Kind))
		return codex.DecisionDecline
	}
	info := chat.PendingApproval{SessionKey: key, Kind: req.Kind, Command: req.Command, Cwd: req.Cwd,
		Reason: req.Reason, ThreadID: req.ThreadID, TurnID: req.TurnID, ItemID: req.ItemID, Asked: a.h.Now(),
		GrantRoot: req.GrantRoot, Files: fileLines(req.Files), Network: req.Network,
		Escalation: a.widening(key, req)}
	if info.Escalation != "" && !a.allowEscalation {
		a.log.Warn("approval.declined", zap.String("why", "escalation"), zap.String("lane", key),
			zap.String("kind", req.Kind), zap.String("escalation", info.Escalation))
		a.h.Notify(a.base(), addr, "", escalationDeclined(info))
		return codex.DecisionDecline
	}
	info.Requester, info.RequesterName = a.h.TurnRequester(addr, req.ThreadID)
	p := a.book.add(info)
	p.platform = addr.Platform
	id := p.info.ID
	a.log.Info("approval.asked", zap.String("lane", key), zap.String("approval", id), zap.String("kind", req.Kind))
	question, msgID := a.ask(ctx, addr, p.info)
	d, mark := a.await(ctx, addr, p)
	a.markPrompt(addr, id, msgID, question, mark)
	return d
}

// await waits for p's decision, the timeout or ctx (codex withdrew the
// request); it returns the decision and the line the prompt gets.
func (a *approvals) await(ctx context.Context, addr chat.Address, p *pendingApproval) (codex.Decision, string) {
	id, key := p.info.ID, addr.SessionKey()
	timer := time.NewTimer(a.timeout)
	defer timer.Stop()
	select {
	case v := <-p.answer:
		return v.decision, verdictMark(v)
	case <-timer.C:
		if a.book.take(id) == nil {
			v := <-p.answer // answered just now
			return v.decision, verdictMark(v)
		}
		a.log.Info("approval.timed_out", zap.String("lane", key), zap.String("approval", id))
		a.h.Notify(a.base(), addr, "", fmt.Sprintf("No answer to approval %s within %s: declined.", id, a.timeout))
		return codex.DecisionDecline, fmt.Sprintf("❌ Declined: no answer within %s", a.timeout)
	case <-ctx.Done():
		// codex withdrew the request (the turn ended or was interrupted):
		// the question in the lane is moot, so say so instead of leaving
		// buttons that would only answer "no longer pending".
		if a.book.take(id) == nil {
			v := <-p.answer
			return v.decision, verdictMark(v)
		}
		a.log.Info("approval.withdrawn", zap.String("lane", key), zap.String("approval", id))
		a.h.Notify(a.base(), addr, "", fmt.Sprintf("Approval %s was withdrawn: the turn ended before an answer.", id))
		return codex.DecisionDecline, "⏹ Withdrawn: the turn ended before an answer"
	}
}

// markPrompt edits the prompt (sent directly as msgID) to its question
// and mark, which takes its buttons away where the platform can: a
// decided prompt must not look open. Only Approve's goroutine calls it,
// once per request, so a prompt is never edited twice. The notices stay:
// a prompt that went through the outbox ("" msgID) cannot be edited, and
// platforms without edits show the decision only there.
func (a *approvals) markPrompt(addr chat.Address, id, msgID, question, mark string) {
	if msgID == "" {
		return
	}
	if err := a.h.EditPrompt(a.base(), addr, msgID, question+"\n"+mark); err != nil {
		a.log.Info("approval.edit_failed", zap.String("lane", addr.SessionKey()), zap.String("approval", id), zap.Error(err))
	}
}

// verdictMark is the line a decided prompt gets.
func verdictMark(v verdict) string {
	var mark string
	switch v.decision {
	case codex.DecisionAccept:
		mark = "✅ Approved once"
	case codex.DecisionAcceptForSession:
		mark = "✅ Approved for this thread"
	case codex.DecisionDecline:
		mark = "❌ Declined"
	default:
		if v.by == "" {
			return "⏹ Cancelled: the reply was stopped"
		}
		mark = "⏹ Cancelled"
	}
	if v.by != "" {
		mark += " by " + v.by
	}
	return mark
}

// shownName is how a decider is named on the prompt: their name where
// the platform gives one, else their id.
func shownName(name, id string) string {
	if name != "" {
		return name
	}
	return id
}

// ask shows the question, with buttons where the platform has them
// (deliverer.askDirect). The first wait of a turn in a shared room pings
// its requester: a reply to their message, and a mention on Discord.
// It returns the question's text and the prompt's message id ("" when it
// went through the outbox).
func (a *approvals) ask(ctx context.Context, addr chat.Address, info chat.PendingApproval) (question, msgID string) {
	p := ext.Prompt{Address: addr, Text: approvalQuestion(info, a.timeout), Approval: &info, Buttons: approvalButtons(info)}
	if ext.GroupPlace(addr.Kind) {
		if user, msgID, ok := a.h.WaitPing(info.ThreadID); ok {
			p.Ping, p.ReplyTo = user, msgID
		}
	}
	return p.Text, a.h.Ask(ctx, p)
}

// Decide answers a pending approval for the lane sessionKey. A decision
// for another lane's request is refused and logged.
func (a *approvals) Decide(sessionKey, id, decision, senderID string) error {
	answer, err := a.claim(sessionKey, id, decision, senderID, senderID, false)
	if err != nil {
		return err
	}
	answer()
	return nil
}

// claim checks a decision and takes the request off the pending
// list; the returned func hands the decision to codex. Splitting the two
// lets a caller acknowledge the decision in the lane first, so the lane
// reads the acknowledgement before the reply the decision unblocks.
// by names the sender on the prompt.
func (a *approvals) claim(sessionKey, id, decision, senderID, by string, platformAdmin bool) (answer func(), err error) {
	d := codex.Decision(decision)
	switch d {
	case codex.DecisionAccept, codex.DecisionAcceptForSession, codex.DecisionDecline, codex.DecisionCancel:
	default:
		return nil, ext.ErrBadDecision
	}
	p := a.book.get(id)
	if p == nil {
		return nil, ext.ErrApprovalNotFound
	}
	if p.info.SessionKey != sessionKey {
		a.log.Warn("approval.refused", zap.String("approval", id), zap.String("lane", sessionKey),
			zap.String("owner", p.info.SessionKey), zap.String("sender", senderID))
		return nil, ext.ErrApprovalWrongLane
	}
	if !a.h.MayDecide(p.platform, p.info.Requester, senderID, platformAdmin) {
		a.log.Info("approval.refused", zap.String("approval", id), zap.String("lane", sessionKey),
			zap.String("why", "not the requester"), zap.String("sender", senderID))
		return nil, ext.Refusal(p.info.Requester, p.info.RequesterName)
	}
	if err := a.mayWiden(p, d, senderID, platformAdmin); err != nil {
		a.log.Info("approval.refused", zap.String("approval", id), zap.String("lane", sessionKey),
			zap.String("why", err.Error()), zap.String("sender", senderID))
		return nil, err
	}
	if a.book.take(id) == nil {
		return nil, ext.ErrApprovalNotFound
	}
	return func() {
		p.answer <- verdict{decision: d, by: by}
		a.log.Info("approval.decided", zap.String("lane", sessionKey), zap.String("approval", id),
			zap.String("decision", decision), zap.String("sender", senderID))
	}, nil
}

// cancel answers every pending request of the lane with cancel
// (codex then ends the turn as interrupted). It returns how many.
func (a *approvals) cancel(key string) int {
	n := 0
	for _, p := range a.book.lane(key) {
		if a.book.take(p.info.ID) != nil {
			p.answer <- verdict{decision: codex.DecisionCancel}
			n++
		}
	}
	if n > 0 {
		a.log.Info("approval.cancelled", zap.String("lane", key), zap.Int("count", n))
	}
	return n
}

// pressed handles an approval button: "approval:<id>:<decision>".
func (a *approvals) pressed(ctx context.Context, in chat.Inbound) {
	rest, ok := strings.CutPrefix(in.Callback, callbackPrefix)
	id, decision, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		a.log.Info("inbound.callback_unknown", zap.String("platform", in.Address.Platform), zap.String("callback", in.Callback))
		return
	}
	a.decideAndSay(ctx, in.Address, "", id, decision, in.SenderID, shownName(in.SenderName, in.SenderID), in.SenderAdmin)
}

// decideAndSay applies a decision and tells the lane what happened (as a
// reply to replyTo), the acknowledgement first.
func (a *approvals) decideAndSay(ctx context.Context, addr chat.Address, replyTo, id, decision, sender, by string, platformAdmin bool) {
	answer, err := a.claim(addr.SessionKey(), id, decision, sender, by, platformAdmin)
	a.h.Notify(ctx, addr, replyTo, decisionText(id, decision, err))
	if err == nil {
		answer()
	}
}

func decisionText(id, decision string, err error) string {
	switch {
	case err == nil:
		return fmt.Sprintf("Approval %s: %s.", id, decisionWords(codex.Decision(decision)))
	case errors.Is(err, ext.ErrApprovalWrongLane):
		return fmt.Sprintf("Approval %s belongs to another conversation; refused.", id)
	case errors.Is(err, ext.ErrApprovalNotFound):
		return fmt.Sprintf("Approval %s is no longer pending (answered, expired or unknown).", id)
	case errors.Is(err, ext.ErrNotApprover):
		return err.Error() + "; approval " + id + " is still waiting."
	case errors.Is(err, ext.ErrAdminsOnly):
		return fmt.Sprintf("Only an admin can allow approval %s (it would widen what this conversation's commands can reach); it is still waiting.", id)
	case errors.Is(err, ext.ErrOnceOnly):
		return fmt.Sprintf("Approval %[1]s can be allowed once only (/approve %[1]s), never for the session; it is still waiting.", id)
	}
	return err.Error()
}

func decisionWords(d codex.Decision) string {
	switch d {
	case codex.DecisionAccept:
		return "approved once"
	case codex.DecisionAcceptForSession:
		return "approved for this thread"
	case codex.DecisionDecline:
		return "declined"
	}
	return "cancelled (the reply stops)"
}

// command is /approve [id] [session] and /deny [id] in the lane at addr.
// Without an id it answers the lane's only pending request. The answer
// goes to the lane as a reply to msgID.
func (a *approvals) command(ctx context.Context, addr chat.Address, msgID, sender, by, args string, approve bool) {
	fields := strings.Fields(args)
	id := ""
	if len(fields) > 0 && strings.HasPrefix(fields[0], "a") {
		id, fields = fields[0], fields[1:]
	}
	if id == "" {
		pending := a.book.lane(addr.SessionKey())
		switch len(pending) {
		case 0:
			a.h.Notify(ctx, addr, msgID, "No approval is pending here.")
			return
		case 1:
			id = pending[0].info.ID
		default:
			a.h.Notify(ctx, addr, msgID, fmt.Sprintf("%d approvals are pending; name one, e.g. /approve %s.",
				len(pending), pending[0].info.ID))
			return
		}
	}
	decision := codex.DecisionDecline
	if approve {
		decision = codex.DecisionAccept
		if len(fields) > 0 && (fields[0] == "session" || fields[0] == "thread") {
			decision = codex.DecisionAcceptForSession
		}
	}
	a.decideAndSay(ctx, addr, msgID, id, string(decision), sender, by, false)
}

// Unsupported is the codex.Options.Unsupported hook: the app-server asked
// for something gatewayd cannot grant (a permission profile, user input, an
// MCP elicitation, a dynamic tool call) and the request was refused with a
// JSON-RPC error. The lane owning the thread is told once per request, so
// the agent's sudden change of course is never a mystery. It is called for
// every refused request, whatever Config.Approvals says.
func (a *approvals) Unsupported(threadID, method string) {
	l, ok := a.h.LaneOfThread(threadID)
	if !ok {
		a.log.Warn("request.refused_unrouted", zap.String("thread", threadID), zap.String("method", method))
		return
	}
	addr := l.Address()
	a.log.Info("request.refused", zap.String("lane", addr.SessionKey()), zap.String("method", method))
	a.h.Notify(a.base(), addr, "", fmt.Sprintf("Codex asked for %s (%s), which gatewayd cannot grant here; it was declined.",
		requestWhat(method), method))
}

// requestWhat names in plain words what a server request asks for (docs/codex-app-server.md §4).
func requestWhat(method string) string {
	switch method {
	case "item/permissions/requestApproval":
		return "extra permissions"
	case "item/tool/requestUserInput":
		return "input from you"
	case "mcpServer/elicitation/request":
		return "information for an MCP server"
	case "item/tool/call":
		return "a dynamic tool call"
	case "execCommandApproval", "applyPatchApproval":
		return "an approval in the old protocol"
	}
	return "something"
}

// base outlives a request: a notice about one is sent after codex
// withdrew it (its context ended).
func (a *approvals) base() context.Context { return a.h.Context() }
