package ext

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// ServerRequests are what the features that answer Codex's server
// requests (approvals, request_user_input, requests gatewayd refuses)
// register, and the services they use: who decides for a turn, asking a
// lane with buttons, editing a question once answered. The daemon and the
// API reach what is registered through the gateway's Approve, Decide,
// AskUser, AnswerQuestion and Unsupported; with nothing registered an
// approval is declined and a question goes unanswered.
type ServerRequests interface {
	// HandleApprovals makes a the taker of Codex's approval requests and
	// of the adapters' decisions. The last registration wins.
	HandleApprovals(a Approvals)
	// HandleQuestions makes q the taker of Codex's request_user_input
	// requests and of the adapters' answers. The last registration wins.
	HandleQuestions(q Questions)
	// OnStopped runs when a lane's turn is stopped or its conversation
	// reset (/stop, /new, /reset, an operator's reset).
	OnStopped(fn func(sessionKey string))
	// OnAnswer claims a plain text message as the answer to what the
	// lane was asked: fn sees every message that is no command (nor
	// ambient talk), and with ok the core records the message, keeping
	// a.Stored as its text, then applies the answer instead of running a
	// turn. The first hook to claim a message wins.
	OnAnswer(fn func(in chat.Inbound) (a Answer, ok bool))

	// RequestSettings are the gateway's settings for Codex's requests.
	RequestSettings() RequestSettings
	// TurnRequester is who decides what the turn on threadID asks in the
	// lane at addr: "" when anyone allowed does (a private chat, the API,
	// codex.approvers: anyone); RequesterUnknown when the turn carries no
	// requester, so a stranger cannot decide for a turn whose author was
	// lost.
	TurnRequester(addr chat.Address, threadID string) (id, name string)
	// MayDecide reports whether sender decides what requester's turn asks
	// on platform; platformAdmin is the platform's word that the sender
	// administers the place.
	MayDecide(platform, requester, sender string, platformAdmin bool) bool
	// IsAdminOf reports whether sender administers platform: named in its
	// admins (codex.admins), or the platform says so.
	IsAdminOf(platform, sender string, platformAdmin bool) bool
	// WaitPing is who to ping that the turn on threadID waits, and the
	// message to reply to: only the first wait of a turn pings.
	WaitPing(threadID string) (user, msgID string, ok bool)
	// Ask sends p directly, with its buttons where the platform has
	// them, and returns the platform's message id; deferred or refused,
	// the outbox keeps the text and the id is "".
	Ask(ctx context.Context, p Prompt) (msgID string)
	// EditPrompt replaces the text of a message Ask sent and takes its
	// buttons away where the platform can.
	EditPrompt(ctx context.Context, addr chat.Address, msgID, text string) error
}

// Approvals take Codex's approval requests and the adapters' decisions.
type Approvals interface {
	// Approve asks the lane owning req.ThreadID and waits for its
	// decision.
	Approve(ctx context.Context, req codex.ApprovalRequest) codex.Decision
	// PendingApprovals lists the lane's requests waiting for a decision.
	PendingApprovals(sessionKey string) []chat.PendingApproval
	// Decide answers a pending approval of the lane sessionKey.
	Decide(sessionKey, id, decision, senderID string) error
	// Unsupported hears of a server request gatewayd refused
	// (codex.Options.Unsupported).
	Unsupported(threadID, method string)
}

// Questions take Codex's request_user_input requests and the adapters'
// answers.
type Questions interface {
	// AskUser asks the lane owning req.ThreadID and waits for every
	// answer (codex.UserInputHandler).
	AskUser(ctx context.Context, req codex.UserInputRequest) (map[string][]string, bool)
	// PendingQuestions lists the lane's requests waiting for answers.
	PendingQuestions(sessionKey string) []chat.PendingQuestion
	// AnswerQuestion answers questions of the lane's pending request id.
	AnswerQuestion(sessionKey, id string, answers map[string][]string, senderID string) error
}

// Answer is a message claimed by an OnAnswer hook.
type Answer struct {
	// Stored is the text its inbound row keeps (a secret answer is not
	// kept).
	Stored string
	// Apply applies the answer, once the message is recorded, and
	// reports whether it answered the message itself (an answer refused
	// is told so in reply to it).
	Apply func(ctx context.Context) (replied bool)
}

// RequestSettings are the gateway's settings for Codex's requests.
type RequestSettings struct {
	Approvals       string        // codex.approvals: "never" or "chat"
	ApprovalTimeout time.Duration // codex.approval_timeout
	AllowEscalation bool          // codex.allow_escalation
	QuestionTimeout time.Duration // codex.question_timeout
}

// Prompt is a question to a lane that waits for its answer.
type Prompt struct {
	Address chat.Address
	Text    string
	// Ping and ReplyTo: the user to notify and the message to reply to.
	Ping, ReplyTo string
	Buttons       []chat.Button
	// Approval or Question is what the message asks, for the platforms
	// that show it their own way.
	Approval *chat.PendingApproval
	Question *chat.QuestionPrompt
}

// Errors of deciding an approval or answering a question, for adapters
// that take them (the API lane).
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

	ErrQuestionNotFound  = errors.New("gateway: no such pending question (answered, expired or unknown)")
	ErrQuestionWrongLane = errors.New("gateway: the question belongs to another lane")
	ErrQuestionAnswered  = errors.New("gateway: the question is already answered")
	ErrBadAnswer         = errors.New("gateway: not an answer to the question")
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

// RequesterUnknown is the requester of a turn in a shared room that
// nobody is known to have asked for: no sender is ever equal to it, so
// only admins decide what the turn asks.
const RequesterUnknown = "\x00unknown"

// Refusal is the error that names who may decide instead of a sender
// MayDecide refused.
func Refusal(requester, requesterName string) error {
	if requester == RequesterUnknown {
		return &NotApproverError{}
	}
	if requesterName == "" {
		requesterName = requester
	}
	return &NotApproverError{Requester: requesterName}
}

// GroupPlace reports whether a lane of kind k is shared by several
// people (a group, a topic, a channel, a thread or a Matrix room). A
// two-member Matrix room counts too: its only other member is the
// requester, so the shared rules change nothing for them.
func GroupPlace(k chat.LaneKind) bool {
	switch k {
	case chat.LaneGroup, chat.LaneTopic, chat.LaneChannel, chat.LaneThread, chat.LaneRoom:
		return true
	}
	return false
}

// OfLane lists the entries of pending (keyed by an id: a letter and a
// sequence number) whose lane is key, oldest first.
func OfLane[P any](pending map[string]P, key string, laneAndID func(P) (lane, id string)) []P {
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
