package gateway

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
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

// Approval policies (Config.Approvals).
const (
	ApprovalsNever = "never" // the app-server never asks; the sandbox decides
	ApprovalsChat  = "chat"  // ask in the lane
)

// Errors of Decide, for adapters that take decisions (the API lane).
var (
	ErrApprovalNotFound  = errors.New("gateway: no such pending approval (answered, expired or unknown)")
	ErrApprovalWrongLane = errors.New("gateway: the approval belongs to another lane")
	ErrBadDecision       = errors.New("gateway: decision must be accept, acceptForSession, decline or cancel")
	// ErrNotApprover: in a shared room with codex.approvers: requester,
	// only who started the turn, or an admin, decides (NotApproverError
	// names them).
	ErrNotApprover = errors.New("gateway: only the turn's requester or an admin decides this approval")
	// ErrAdminsOnly: a request that widens the lane's boundary
	// (codex.allow_escalation) is allowed by an admin only.
	ErrAdminsOnly = errors.New("gateway: only an admin can allow this approval")
	// ErrOnceOnly: a request that widens the lane's boundary is allowed
	// once, never for the session.
	ErrOnceOnly = errors.New("gateway: this approval can be allowed once only, never for the session")
)

// NotApproverError is ErrNotApprover naming who may decide.
type NotApproverError struct{ Requester string }

func (e *NotApproverError) Error() string {
	if e.Requester == "" {
		return "Only an admin can decide this (who asked for this turn is not known)"
	}
	return "Only " + e.Requester + " or an admin can decide this"
}
func (e *NotApproverError) Unwrap() error { return ErrNotApprover }

// callbackPrefix starts the Button.ID of approval buttons:
// "approval:<id>:<decision>".
const callbackPrefix = "approval:"

// PendingApproval describes a request waiting for a decision.
type PendingApproval struct {
	ID, SessionKey             string
	Kind, Command, Cwd, Reason string
	ThreadID, TurnID, ItemID   string
	Asked                      time.Time
	// Requester (platform user id) and RequesterName: in a shared room
	// with codex.approvers: requester, only they or an admin decide.
	// "" when anyone allowed decides; requesterUnknown when nobody is
	// known to have asked for the turn (then only admins decide).
	Requester, RequesterName string
	// GrantRoot (a file change) asks for writes under this directory for
	// the rest of the session; Files are the paths the change writes
	// ("path (add)"); Network is the host a command asks to reach.
	GrantRoot string
	Files     []string
	Network   string
	// Escalation says, in words, how the request would widen the lane's
	// boundary ("run outside the sandbox"); "" when it stays inside.
	// Such a request is only asked with codex.allow_escalation, and then
	// only an admin allows it, once (acceptForSession is refused).
	Escalation string
}

type pendingApproval struct {
	info     PendingApproval
	platform string              // the lane's, for its admins
	answer   chan codex.Decision // buffered: written once, by whoever took the entry
}

// approvalBook holds the pending approvals; the zero value is ready.
type approvalBook struct {
	mu      sync.Mutex
	seq     int64
	pending map[string]*pendingApproval
}

func (b *approvalBook) add(info PendingApproval) *pendingApproval {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending == nil {
		b.pending = make(map[string]*pendingApproval)
	}
	b.seq++
	info.ID = "a" + strconv.FormatInt(b.seq, 10)
	p := &pendingApproval{info: info, answer: make(chan codex.Decision, 1)}
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
	return inLane(b.pending, key, func(p *pendingApproval) (string, string) { return p.info.SessionKey, p.info.ID })
}

// inLane lists the entries of pending (keyed by an id: a letter and a
// sequence number) whose lane is key, oldest first.
func inLane[P any](pending map[string]P, key string, laneAndID func(P) (lane, id string)) []P {
	var out []P
	for _, p := range pending {
		if lane, _ := laneAndID(p); lane == key {
			out = append(out, p)
		}
	}
	seq := func(p P) int64 {
		_, id := laneAndID(p)
		n, _ := strconv.ParseInt(id[1:], 10, 64)
		return n
	}
	sort.Slice(out, func(i, j int) bool { return seq(out[i]) < seq(out[j]) })
	return out
}

// approvals is chat approvals and the notices about server requests
// gatewayd refuses: it owns the book of pending requests, asks the lane
// owning a request's thread, and takes the lane's decision from a button,
// /approve and /deny, or an adapter (Decide).
type approvals struct {
	mode    string        // Config.Approvals
	timeout time.Duration // Config.ApprovalTimeout
	book    approvalBook
	// allowEscalation is Config.AllowEscalation; roots are each lane's
	// directories as its latest turn was given them (the input hook).
	allowEscalation bool
	roots           laneRoots

	// laneOf returns the address of the lane whose thread is threadID
	// (laneTable.addressOfThread).
	laneOf func(threadID string) (Address, bool)
	// requesterOf is who sent the message whose turn runs on threadID
	// (laneTable.requesterOfThread).
	requesterOf func(threadID string) (id, name string)
	// waitPing is who to ping that the turn waits (laneTable.waitPingOfThread).
	waitPing func(threadID string) (user, msgID string, ok bool)
	deciders approverRule
	// base is the gateway's base context: notices about a request outlive
	// the request's own context (it ends when codex withdraws it).
	base context.Context
	out  *deliverer // notices through the outbox
	log  *zap.Logger
	now  func() time.Time
}

// newApprovals builds the approvals module.
func newApprovals(cfg Config, lanes *laneTable, base context.Context, out *deliverer, log *zap.Logger) *approvals {
	return &approvals{mode: cfg.Approvals, timeout: cfg.ApprovalTimeout, allowEscalation: cfg.AllowEscalation,
		laneOf: lanes.addressOfThread, requesterOf: lanes.requesterOfThread, waitPing: lanes.waitPingOfThread, deciders: newApproverRule(cfg),
		base: base, out: out, log: log, now: cfg.Now}
}

// approverRule is codex.approvers: in a shared room, what a turn asks
// (an approval, a question) is decided by who started the turn or by an
// admin of the platform; with "anyone", by any allowed member.
type approverRule struct {
	anyone bool                       // codex.approvers: anyone
	admins map[string]map[string]bool // platform → admin user ids
}

func newApproverRule(cfg Config) approverRule {
	admins := make(map[string]map[string]bool)
	for platform, ids := range cfg.Admins {
		admins[platform] = make(map[string]bool, len(ids))
		for _, id := range ids {
			admins[platform][id] = true
		}
	}
	return approverRule{anyone: cfg.Approvers == config.ApproversAnyone, admins: admins}
}

// requesterUnknown is the requester of a turn in a shared room that
// nobody is known to have asked for: no sender is ever equal to it, so
// only admins decide what the turn asks.
const requesterUnknown = "\x00unknown"

// requester is who decides for the turn asking on threadID in the lane
// at addr: "" when anyone allowed does (a private chat, the API, or
// codex.approvers: anyone); requesterUnknown when the turn carries no
// requester, so a stranger's press cannot decide for a turn whose author
// was lost.
func (r approverRule) requester(addr Address, requesterOf func(string) (string, string), threadID string) (id, name string) {
	if r.anyone || !isGroupPlace(addr.Kind) {
		return "", ""
	}
	if id, name = requesterOf(threadID); id == "" {
		return requesterUnknown, ""
	}
	return id, name
}

// may reports whether sender decides what requester's turn asks on
// platform; platformAdmin is the platform's own word that the sender
// administers the place (Discord: Manage Channels).
func (r approverRule) may(platform, requester, sender string, platformAdmin bool) bool {
	return requester == "" || (sender == requester && requester != requesterUnknown) || r.admin(platform, sender, platformAdmin)
}

// admin reports whether sender administers platform: named in its
// admins list, or the platform says so.
func (r approverRule) admin(platform, sender string, platformAdmin bool) bool {
	return platformAdmin || r.admins[platform][sender]
}

// refusal names who may decide instead.
func (r approverRule) refusal(requester, requesterName string) error {
	if requester == requesterUnknown {
		return &NotApproverError{}
	}
	if requesterName == "" {
		requesterName = requester
	}
	return &NotApproverError{Requester: requesterName}
}

// register adds /approve, /deny, the approval buttons, and cancels a lane's
// pending requests when its turn is stopped or its conversation reset.
func (a *approvals) register(h *host) {
	decide := func(ctx context.Context, c commandCall) bool {
		a.command(ctx, c.lane.addr, c.msgID, c.sender, c.args, c.name == "approve")
		return true
	}
	h.command("approve", decide)
	h.command("deny", decide)
	h.callback(callbackPrefix, a.pressed)
	h.hooks.stopped = append(h.hooks.stopped, func(key string) { a.cancel(key) })
}

// noteRoots keeps the roots the lane's turn really gets: what turn/start
// sends once every input hook ran (confinement and worktrees add them).
func (a *approvals) noteRoots(sessionKey string, in *codex.TurnInput) {
	a.roots.set(sessionKey, turnRoots(in))
}

// PendingApprovals lists the lane's requests waiting for a decision.
func (g *Gateway) PendingApprovals(sessionKey string) []PendingApproval {
	return g.approvals.pending(sessionKey)
}

// Approve is the codex approval handler for Config.Approvals "chat" (see
// approvals.approve).
func (g *Gateway) Approve(ctx context.Context, req codex.ApprovalRequest) codex.Decision {
	return g.approvals.approve(ctx, req)
}

// Decide answers a pending approval for the lane sessionKey. A decision
// for another lane's request is refused and logged.
func (g *Gateway) Decide(sessionKey, id, decision, senderID string) error {
	return g.approvals.decide(sessionKey, id, decision, senderID)
}

// Unsupported is the codex.Options.Unsupported hook (see
// approvals.unsupported).
func (g *Gateway) Unsupported(threadID, method string) { g.approvals.unsupported(threadID, method) }

// pending lists the lane's requests waiting for a decision.
func (a *approvals) pending(sessionKey string) []PendingApproval {
	var out []PendingApproval
	for _, p := range a.book.lane(sessionKey) {
		out = append(out, p.info)
	}
	return out
}

// approve asks the lane owning req.ThreadID and waits for its decision,
// the timeout or ctx (the app-server went away).
func (a *approvals) approve(ctx context.Context, req codex.ApprovalRequest) codex.Decision {
	if a.mode != ApprovalsChat {
		a.log.Warn("approval.declined", zap.String("why", "approvals are not chat"), zap.String("thread", req.ThreadID))
		return codex.DecisionDecline
	}
	addr, ok := a.laneOf(req.ThreadID)
	if !ok {
		a.log.Warn("approval.declined", zap.String("why", "no lane owns the thread"), zap.String("thread", req.ThreadID))
		return codex.DecisionDecline
	}
	key := addr.SessionKey()
	if req.Kind != "command" && req.Kind != "fileChange" {
		a.log.Warn("approval.declined", zap.String("why", "unsupported kind"), zap.String("kind", req.Kind))
		a.out.Notify(a.base, addr, "", fmt.Sprintf("Codex asked for a %q approval, which this gateway cannot grant; declined.", req.Kind))
		return codex.DecisionDecline
	}
	info := PendingApproval{SessionKey: key, Kind: req.Kind, Command: req.Command, Cwd: req.Cwd,
		Reason: req.Reason, ThreadID: req.ThreadID, TurnID: req.TurnID, ItemID: req.ItemID, Asked: a.now(),
		GrantRoot: req.GrantRoot, Files: fileLines(req.Files), Network: req.Network,
		Escalation: a.widening(key, req)}
	if info.Escalation != "" && !a.allowEscalation {
		a.log.Warn("approval.declined", zap.String("why", "escalation"), zap.String("lane", key),
			zap.String("kind", req.Kind), zap.String("escalation", info.Escalation))
		a.out.Notify(a.base, addr, "", escalationDeclined(info))
		return codex.DecisionDecline
	}
	info.Requester, info.RequesterName = a.deciders.requester(addr, a.requesterOf, req.ThreadID)
	p := a.book.add(info)
	p.platform = addr.Platform
	id := p.info.ID
	a.log.Info("approval.asked", zap.String("lane", key), zap.String("approval", id), zap.String("kind", req.Kind))
	a.ask(ctx, addr, p.info)
	timer := time.NewTimer(a.timeout)
	defer timer.Stop()
	select {
	case d := <-p.answer:
		return d
	case <-timer.C:
		if a.book.take(id) == nil {
			return <-p.answer // answered just now
		}
		a.log.Info("approval.timed_out", zap.String("lane", key), zap.String("approval", id))
		a.out.Notify(a.base, addr, "", fmt.Sprintf("No answer to approval %s within %s: declined.", id, a.timeout))
		return codex.DecisionDecline
	case <-ctx.Done():
		// codex withdrew the request (the turn ended or was interrupted):
		// the question in the lane is moot, so say so instead of leaving
		// buttons that would only answer "no longer pending".
		if a.book.take(id) == nil {
			return <-p.answer
		}
		a.log.Info("approval.withdrawn", zap.String("lane", key), zap.String("approval", id))
		a.out.Notify(a.base, addr, "", fmt.Sprintf("Approval %s was withdrawn: the turn ended before an answer.", id))
		return codex.DecisionDecline
	}
}

// ask shows the question, with buttons where the platform has them
// (deliverer.askDirect). The first wait of a turn in a shared room pings
// its requester: a reply to their message, and a mention on Discord.
func (a *approvals) ask(ctx context.Context, addr Address, info PendingApproval) {
	out := Outbound{Address: addr, Kind: OutNotice, Text: approvalQuestion(info, a.timeout), Approval: &info}
	if isGroupPlace(addr.Kind) {
		if user, msgID, ok := a.waitPing(info.ThreadID); ok {
			out.Ping, out.ReplyTo = user, msgID
		}
	}
	a.out.askDirect(ctx, out, approvalButtons(info))
}

// decide answers a pending approval for the lane sessionKey.
func (a *approvals) decide(sessionKey, id, decision, senderID string) error {
	answer, err := a.claim(sessionKey, id, decision, senderID, false)
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
func (a *approvals) claim(sessionKey, id, decision, senderID string, platformAdmin bool) (answer func(), err error) {
	d := codex.Decision(decision)
	switch d {
	case codex.DecisionAccept, codex.DecisionAcceptForSession, codex.DecisionDecline, codex.DecisionCancel:
	default:
		return nil, ErrBadDecision
	}
	p := a.book.get(id)
	if p == nil {
		return nil, ErrApprovalNotFound
	}
	if p.info.SessionKey != sessionKey {
		a.log.Warn("approval.refused", zap.String("approval", id), zap.String("lane", sessionKey),
			zap.String("owner", p.info.SessionKey), zap.String("sender", senderID))
		return nil, ErrApprovalWrongLane
	}
	if !a.deciders.may(p.platform, p.info.Requester, senderID, platformAdmin) {
		a.log.Info("approval.refused", zap.String("approval", id), zap.String("lane", sessionKey),
			zap.String("why", "not the requester"), zap.String("sender", senderID))
		return nil, a.deciders.refusal(p.info.Requester, p.info.RequesterName)
	}
	if err := a.mayWiden(p, d, senderID, platformAdmin); err != nil {
		a.log.Info("approval.refused", zap.String("approval", id), zap.String("lane", sessionKey),
			zap.String("why", err.Error()), zap.String("sender", senderID))
		return nil, err
	}
	if a.book.take(id) == nil {
		return nil, ErrApprovalNotFound
	}
	return func() {
		p.answer <- d
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
			p.answer <- codex.DecisionCancel
			n++
		}
	}
	if n > 0 {
		a.log.Info("approval.cancelled", zap.String("lane", key), zap.Int("count", n))
	}
	return n
}

// pressed handles an approval button: "approval:<id>:<decision>".
func (a *approvals) pressed(ctx context.Context, in Inbound) {
	rest, ok := strings.CutPrefix(in.Callback, callbackPrefix)
	id, decision, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		a.log.Info("inbound.callback_unknown", zap.String("platform", in.Address.Platform), zap.String("callback", in.Callback))
		return
	}
	a.decideAndSay(ctx, in.Address, "", id, decision, in.SenderID, in.SenderAdmin)
}

// decideAndSay applies a decision and tells the lane what happened (as a
// reply to replyTo), the acknowledgement first.
func (a *approvals) decideAndSay(ctx context.Context, addr Address, replyTo, id, decision, sender string, platformAdmin bool) {
	answer, err := a.claim(addr.SessionKey(), id, decision, sender, platformAdmin)
	a.out.Notify(ctx, addr, replyTo, decisionText(id, decision, err))
	if err == nil {
		answer()
	}
}

func decisionText(id, decision string, err error) string {
	switch {
	case err == nil:
		return fmt.Sprintf("Approval %s: %s.", id, decisionWords(codex.Decision(decision)))
	case errors.Is(err, ErrApprovalWrongLane):
		return fmt.Sprintf("Approval %s belongs to another conversation; refused.", id)
	case errors.Is(err, ErrApprovalNotFound):
		return fmt.Sprintf("Approval %s is no longer pending (answered, expired or unknown).", id)
	case errors.Is(err, ErrNotApprover):
		return err.Error() + "; approval " + id + " is still waiting."
	case errors.Is(err, ErrAdminsOnly):
		return fmt.Sprintf("Only an admin can allow approval %s (it would widen what this conversation's commands can reach); it is still waiting.", id)
	case errors.Is(err, ErrOnceOnly):
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
func (a *approvals) command(ctx context.Context, addr Address, msgID, sender, args string, approve bool) {
	fields := strings.Fields(args)
	id := ""
	if len(fields) > 0 && strings.HasPrefix(fields[0], "a") {
		id, fields = fields[0], fields[1:]
	}
	if id == "" {
		pending := a.book.lane(addr.SessionKey())
		switch len(pending) {
		case 0:
			a.out.Notify(ctx, addr, msgID, "No approval is pending here.")
			return
		case 1:
			id = pending[0].info.ID
		default:
			a.out.Notify(ctx, addr, msgID, fmt.Sprintf("%d approvals are pending; name one, e.g. /approve %s.",
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
	a.decideAndSay(ctx, addr, msgID, id, string(decision), sender, false)
}

// unsupported is the codex.Options.Unsupported hook: the app-server asked
// for something gatewayd cannot grant (a permission profile, user input, an
// MCP elicitation, a dynamic tool call) and the request was refused with a
// JSON-RPC error. The lane owning the thread is told once per request, so
// the agent's sudden change of course is never a mystery. It is called for
// every refused request, whatever Config.Approvals says.
func (a *approvals) unsupported(threadID, method string) {
	addr, ok := a.laneOf(threadID)
	if !ok {
		a.log.Warn("request.refused_unrouted", zap.String("thread", threadID), zap.String("method", method))
		return
	}
	a.log.Info("request.refused", zap.String("lane", addr.SessionKey()), zap.String("method", method))
	a.out.Notify(a.base, addr, "", fmt.Sprintf("Codex asked for %s (%s), which gatewayd cannot grant here; it was declined.",
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
