package chat

import (
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// PendingApproval describes a Codex approval request waiting for a
// decision in a lane. A platform shows it with the question
// (Outbound.Approval); the API lists it.
type PendingApproval struct {
	ID, SessionKey             string
	Kind, Command, Cwd, Reason string
	ThreadID, TurnID, ItemID   string
	Asked                      time.Time
	// Requester (platform user id) and RequesterName: in a shared room
	// with codex.approvers: requester, only they or an admin decide.
	// "" when anyone allowed decides; ext.RequesterUnknown when nobody is
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

// PendingQuestion is one request_user_input request waiting for answers.
type PendingQuestion struct {
	ID, SessionKey           string
	ThreadID, TurnID, ItemID string
	Questions                []codex.Question
	// Answered lists the ids of the questions answered so far.
	Answered []string
	Asked    time.Time
	// Requester (platform user id) and RequesterName: in a shared room
	// with codex.approvers: requester, only they or an admin answer.
	Requester, RequesterName string
}

// QuestionPrompt is on the message that asks one question of a pending
// request (Outbound.Question): Index is the question's.
type QuestionPrompt struct {
	Pending PendingQuestion
	Index   int
}
