package exttest

import (
	"context"
	"slices"
	"strconv"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// requests records what a feature registers for Codex's server requests
// and the prompts it sends (ext.ServerRequests).
type requests struct {
	// Settings is what RequestSettings returns.
	Settings ext.RequestSettings
	// Threads are the lanes LaneOfThread finds, by thread id.
	Threads map[string]ext.Lane
	// Asked, when set, receives each prompt Ask sends (after recording
	// it): a test waits on it for the feature to ask.
	Asked chan ext.Prompt
	// Approvers decides MayDecide: nil lets anyone decide.
	Approvers func(platform, requester, sender string, platformAdmin bool) bool

	approvals ext.Approvals
	questions ext.Questions
	stopped   []func(string)
	answers   []func(chat.Inbound) (ext.Answer, bool)
	prompts   []ext.Prompt
	edits     []string
}

func (h *Host) HandleApprovals(a ext.Approvals) { h.mu.Lock(); h.approvals = a; h.mu.Unlock() }
func (h *Host) HandleQuestions(q ext.Questions) { h.mu.Lock(); h.questions = q; h.mu.Unlock() }
func (h *Host) OnStopped(fn func(string)) {
	h.mu.Lock()
	h.stopped = append(h.stopped, fn)
	h.mu.Unlock()
}

func (h *Host) OnAnswer(fn func(chat.Inbound) (ext.Answer, bool)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answers = append(h.answers, fn)
}

func (h *Host) RequestSettings() ext.RequestSettings { return h.Settings }

// TurnRequester: the fake knows no turns, so anyone decides.
func (h *Host) TurnRequester(chat.Address, string) (string, string) { return "", "" }

func (h *Host) MayDecide(platform, requester, sender string, platformAdmin bool) bool {
	if h.Approvers == nil {
		return true
	}
	return h.Approvers(platform, requester, sender, platformAdmin)
}

func (h *Host) IsAdminOf(_, sender string, platformAdmin bool) bool {
	return platformAdmin || h.Admins[sender]
}

func (h *Host) WaitPing(string) (string, string, bool) { return "", "", false }

// Ask records p (and sends it to Asked); its message id is "m" and its number.
func (h *Host) Ask(_ context.Context, p ext.Prompt) string {
	h.mu.Lock()
	h.prompts = append(h.prompts, p)
	id := "m" + strconv.Itoa(len(h.prompts))
	h.mu.Unlock()
	if h.Asked != nil {
		h.Asked <- p
	}
	return id
}

func (h *Host) EditPrompt(_ context.Context, _ chat.Address, msgID, text string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.edits = append(h.edits, msgID+": "+text)
	return nil
}

// Prompts are what the feature asked, in order.
func (h *Host) Prompts() []ext.Prompt {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.prompts)
}

// Edits are the prompts the feature edited, "msgID: text", in order.
func (h *Host) Edits() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.edits)
}

// Approvals and Questions are what the feature registered.
func (h *Host) Approvals() ext.Approvals { h.mu.Lock(); defer h.mu.Unlock(); return h.approvals }
func (h *Host) Questions() ext.Questions { h.mu.Lock(); defer h.mu.Unlock(); return h.questions }

// Stop runs the OnStopped hooks for the lane key.
func (h *Host) Stop(key string) {
	h.mu.Lock()
	hooks := slices.Clone(h.stopped)
	h.mu.Unlock()
	for _, fn := range hooks {
		fn(key)
	}
}

// AnswerOf is the answer an OnAnswer hook claims in as.
func (h *Host) AnswerOf(in chat.Inbound) (ext.Answer, bool) {
	h.mu.Lock()
	hooks := slices.Clone(h.answers)
	h.mu.Unlock()
	for _, fn := range hooks {
		if a, ok := fn(in); ok {
			return a, true
		}
	}
	return ext.Answer{}, false
}
