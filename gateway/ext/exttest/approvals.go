package exttest

import (
	"context"
	"slices"
	"strconv"
	"sync"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// requests records what a feature registers for Codex's server requests
// and the prompts it sends (ext.ServerRequests).
type requests struct {
	// Settings is what RequestSettings returns.
	Settings ext.RequestSettings
	// Asked, when set, receives each prompt Ask sends (after recording
	// it): a test waits on it for the feature to ask.
	Asked chan ext.Prompt
	// Approvers decides MayDecide: nil lets anyone decide.
	Approvers func(platform, requester, sender string, platformAdmin bool) bool

	mu        sync.Mutex
	approvals ext.Approvals
	questions ext.Questions
	stopped   []func(string)
	answers   []func(chat.Inbound) (ext.Answer, bool)
	prompts   []ext.Prompt
	edits     []string
}

func (r *requests) HandleApprovals(a ext.Approvals) { r.mu.Lock(); r.approvals = a; r.mu.Unlock() }
func (r *requests) HandleQuestions(q ext.Questions) { r.mu.Lock(); r.questions = q; r.mu.Unlock() }
func (r *requests) OnStopped(fn func(string)) {
	r.mu.Lock()
	r.stopped = append(r.stopped, fn)
	r.mu.Unlock()
}

func (r *requests) OnAnswer(fn func(chat.Inbound) (ext.Answer, bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers = append(r.answers, fn)
}

func (r *requests) RequestSettings() ext.RequestSettings { return r.Settings }

// TurnRequester: the fake knows no turns, so anyone decides.
func (r *requests) TurnRequester(chat.Address, string) (string, string) { return "", "" }

func (r *requests) MayDecide(platform, requester, sender string, platformAdmin bool) bool {
	if r.Approvers == nil {
		return true
	}
	return r.Approvers(platform, requester, sender, platformAdmin)
}

func (r *requests) WaitPing(string) (string, string, bool) { return "", "", false }

// Ask records p (and sends it to Asked); its message id is "m" and its number.
func (r *requests) Ask(_ context.Context, p ext.Prompt) string {
	r.mu.Lock()
	r.prompts = append(r.prompts, p)
	id := "m" + strconv.Itoa(len(r.prompts))
	r.mu.Unlock()
	if r.Asked != nil {
		r.Asked <- p
	}
	return id
}

func (r *requests) EditPrompt(_ context.Context, _ chat.Address, msgID, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.edits = append(r.edits, msgID+": "+text)
	return nil
}

// Prompts are what the feature asked, in order.
func (r *requests) Prompts() []ext.Prompt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.prompts)
}

// Edits are the prompts the feature edited, "msgID: text", in order.
func (r *requests) Edits() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.edits)
}

// Approvals and Questions are what the feature registered.
func (r *requests) Approvals() ext.Approvals { r.mu.Lock(); defer r.mu.Unlock(); return r.approvals }
func (r *requests) Questions() ext.Questions { r.mu.Lock(); defer r.mu.Unlock(); return r.questions }

// Stop runs the OnStopped hooks for the lane key.
func (r *requests) Stop(key string) {
	r.mu.Lock()
	hooks := slices.Clone(r.stopped)
	r.mu.Unlock()
	for _, fn := range hooks {
		fn(key)
	}
}

// AnswerOf is the answer an OnAnswer hook claims in as.
func (r *requests) AnswerOf(in chat.Inbound) (ext.Answer, bool) {
	r.mu.Lock()
	hooks := slices.Clone(r.answers)
	r.mu.Unlock()
	for _, fn := range hooks {
		if a, ok := fn(in); ok {
			return a, true
		}
	}
	return ext.Answer{}, false
}
