package gateway

import (
	"context"
	"sync"

	"github.com/gatewayd/gatewayd/gateway/outbox"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// The core side of ext.ServerRequests: Codex's server requests and the
// adapters' decisions reach whatever feature registered for them; the
// Gateway's methods the daemon and the API call delegate to it.

// The approval and question vocabulary is the extension API's; these
// names are the ones the platforms and the daemon know.
type (
	PendingApproval  = chat.PendingApproval
	PendingQuestion  = chat.PendingQuestion
	QuestionPrompt   = chat.QuestionPrompt
	NotApproverError = ext.NotApproverError
)

// Approval policies (Config.Approvals).
const (
	ApprovalsNever = "never" // the app-server never asks; the sandbox decides
	ApprovalsChat  = "chat"  // ask in the lane
)

// Errors of Decide and AnswerQuestion (see ext).
var (
	ErrApprovalNotFound  = ext.ErrApprovalNotFound
	ErrApprovalWrongLane = ext.ErrApprovalWrongLane
	ErrBadDecision       = ext.ErrBadDecision
	ErrNotApprover       = ext.ErrNotApprover
	ErrAdminsOnly        = ext.ErrAdminsOnly
	ErrOnceOnly          = ext.ErrOnceOnly
	ErrQuestionNotFound  = ext.ErrQuestionNotFound
	ErrQuestionWrongLane = ext.ErrQuestionWrongLane
	ErrQuestionAnswered  = ext.ErrQuestionAnswered
	ErrBadAnswer         = ext.ErrBadAnswer
)

// serverRequests are what the features registered for Codex's requests;
// the zero value has none.
type serverRequests struct {
	settings  ext.RequestSettings // set while the gateway is built
	mu        sync.RWMutex
	approvals ext.Approvals
	questions ext.Questions
	answers   []func(in chat.Inbound) (ext.Answer, bool)
}

// extServerRequests is a feature's host's ext.ServerRequests: Codex's
// server requests a feature handles, and the services deciding them use.
type extServerRequests struct{ *extCore }

var _ ext.ServerRequests = extServerRequests{}

func (s *serverRequests) approver() ext.Approvals {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.approvals
}

func (s *serverRequests) asker() ext.Questions {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.questions
}

// answerOf is the answer a registered hook claims in as, if any. A
// command is never an answer.
func (h *host) answerOf(in Inbound) (ext.Answer, bool) {
	if in.Ambient {
		return ext.Answer{}, false
	}
	if h.isCommand(in.Text) {
		return ext.Answer{}, false
	}
	for _, fn := range h.requests.answers {
		if a, ok := fn(in); ok {
			return a, true
		}
	}
	return ext.Answer{}, false
}

func (e extServerRequests) HandleApprovals(a ext.Approvals) {
	e.h.requests.mu.Lock()
	defer e.h.requests.mu.Unlock()
	e.h.requests.approvals = a
}

func (e extServerRequests) HandleQuestions(q ext.Questions) {
	e.h.requests.mu.Lock()
	defer e.h.requests.mu.Unlock()
	e.h.requests.questions = q
}

func (e extServerRequests) OnStopped(fn func(sessionKey string)) {
	e.h.hooks.stopped = append(e.h.hooks.stopped, fn)
}

// OnAnswer hooks are registered before any message arrives, so reading
// them unlocked afterwards is safe.
func (e extServerRequests) OnAnswer(fn func(in chat.Inbound) (ext.Answer, bool)) {
	e.h.requests.answers = append(e.h.requests.answers, fn)
}

func (e extServerRequests) RequestSettings() ext.RequestSettings { return e.h.requests.settings }

// requestSettings are cfg's settings for Codex's requests.
func requestSettings(cfg Config) ext.RequestSettings {
	return ext.RequestSettings{Approvals: cfg.Approvals, ApprovalTimeout: cfg.ApprovalTimeout,
		AllowEscalation: cfg.AllowEscalation, QuestionTimeout: cfg.QuestionTimeout}
}

func (e extServerRequests) TurnRequester(addr chat.Address, threadID string) (id, name string) {
	return e.admins.requester(addr, e.work.lanes.requesterOfThread, threadID)
}

func (e extServerRequests) MayDecide(platform, requester, sender string, platformAdmin bool) bool {
	return e.admins.may(platform, requester, sender, platformAdmin)
}

func (e extServerRequests) IsAdminOf(platform, sender string, platformAdmin bool) bool {
	return e.admins.admin(platform, sender, platformAdmin)
}

func (e extServerRequests) WaitPing(threadID string) (user, msgID string, ok bool) {
	return e.work.lanes.waitPingOfThread(threadID)
}

func (e extServerRequests) Ask(ctx context.Context, p ext.Prompt) string {
	out := Outbound{Address: p.Address, Kind: OutNotice, Text: p.Text, Ping: p.Ping, ReplyTo: p.ReplyTo,
		Approval: p.Approval, Question: p.Question}
	return e.out.AskDirect(ctx, out, p.Buttons)
}

// EditPrompt edits within outbox.SendTimeout: an answer's mark is not worth
// holding up the lane for a platform that hangs.
func (e extServerRequests) EditPrompt(ctx context.Context, addr chat.Address, msgID, text string) error {
	ectx, cancel := context.WithTimeout(ctx, outbox.SendTimeout)
	defer cancel()
	switch pl := e.platforms[addr.Platform].(type) {
	case ButtonEditor:
		return pl.EditButtons(ectx, addr, msgID, text, nil)
	case Platform:
		return pl.Edit(ectx, addr, msgID, text)
	}
	return nil
}

// Approve is the codex approval handler for Config.Approvals "chat": the
// registered feature asks the lane; without one the request is declined.
func (g *Gateway) Approve(ctx context.Context, req codex.ApprovalRequest) codex.Decision {
	a := g.host.requests.approver()
	if a == nil {
		g.log.Warn("approval.declined", zap.String("why", "no feature takes approvals"), zap.String("thread", req.ThreadID))
		return codex.DecisionDecline
	}
	return a.Approve(ctx, req)
}

// PendingApprovals lists the lane's requests waiting for a decision.
func (g *Gateway) PendingApprovals(sessionKey string) []PendingApproval {
	if a := g.host.requests.approver(); a != nil {
		return a.PendingApprovals(sessionKey)
	}
	return nil
}

// Decide answers a pending approval for the lane sessionKey. A decision
// for another lane's request is refused and logged.
func (g *Gateway) Decide(sessionKey, id, decision, senderID string) error {
	if a := g.host.requests.approver(); a != nil {
		return a.Decide(sessionKey, id, decision, senderID)
	}
	return ErrApprovalNotFound
}

// Unsupported is the codex.Options.Unsupported hook: the registered
// feature tells the lane; without one the request is only logged.
func (g *Gateway) Unsupported(threadID, method string) {
	if a := g.host.requests.approver(); a != nil {
		a.Unsupported(threadID, method)
		return
	}
	g.log.Info("request.refused", zap.String("thread", threadID), zap.String("method", method))
}

// AskUser is the codex.UserInputHandler: the registered feature asks the
// lane; without one the request goes unanswered.
func (g *Gateway) AskUser(ctx context.Context, req codex.UserInputRequest) (map[string][]string, bool) {
	if q := g.host.requests.asker(); q != nil {
		return q.AskUser(ctx, req)
	}
	g.log.Warn("question.unrouted", zap.String("thread", req.ThreadID), zap.String("why", "no feature takes questions"))
	return nil, false
}

// PendingQuestions lists the lane's requests waiting for answers.
func (g *Gateway) PendingQuestions(sessionKey string) []PendingQuestion {
	if q := g.host.requests.asker(); q != nil {
		return q.PendingQuestions(sessionKey)
	}
	return nil
}

// AnswerQuestion answers questions of the lane's pending request id.
func (g *Gateway) AnswerQuestion(sessionKey, id string, answers map[string][]string, senderID string) error {
	if q := g.host.requests.asker(); q != nil {
		return q.AnswerQuestion(sessionKey, id, answers, senderID)
	}
	return ErrQuestionNotFound
}
