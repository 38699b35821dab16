package codex

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
)

// TurnStatus is how a turn ended.
type TurnStatus string

// Turn statuses reported by turn/completed.
const (
	TurnCompleted   TurnStatus = "completed"
	TurnFailed      TurnStatus = "failed"
	TurnInterrupted TurnStatus = "interrupted"
)

// Usage is a thread's token usage as reported by thread/tokenUsage/updated:
// totals for the thread, the last request's total and the context window.
type Usage struct {
	TotalTokens, InputTokens, CachedInputTokens, OutputTokens, ReasoningOutputTokens int64
	LastTotalTokens, ContextWindow                                                   int64
	// Last is the last model request's breakdown (LastTotalTokens is its
	// Total): what the context holds now.
	Last TokenCounts
	// Turn is what the turn spent (set on TurnResult.Usage only; zero in
	// Client.Usage): the thread totals' growth during the turn.
	Turn TokenCounts
}

// TurnError is turn.error of a failed turn.
type TurnError struct {
	Message string
	Info    string // codexErrorInfo as compact JSON
	// Kind names codexErrorInfo ("usageLimitExceeded", or the key of the
	// object form, e.g. "httpConnectionFailed"); "" when absent.
	Kind string
}

// Item is a completed transcript item of a turn.
type Item struct {
	Type, ID string
	Text     string // for userMessage/agentMessage
	Raw      json.RawMessage
}

// Item types the client interprets; all others are passed through in Raw.
const (
	ItemUserMessage       = "userMessage"
	ItemAgentMessage      = "agentMessage"
	ItemContextCompaction = "contextCompaction"
)

// TurnResult is the outcome of RunTurn.
type TurnResult struct {
	ThreadID, TurnID string
	Status           TurnStatus
	// Text is the final agent text. On interrupt it is the text streamed so
	// far (completed agent messages and the cut-off partial).
	Text  string
	Error *TurnError
	Usage Usage
	// Items are the turn's completed items in arrival order. The app-server
	// echoes the caller's own input as an Item of Type ItemUserMessage (and a
	// steer adds another): the caller already stored that text and must not
	// store these as second user rows. Filter with IsUserEcho.
	Items         []Item
	WatchdogFired bool
}

// IsUserEcho reports whether the item is the app-server's echo of user
// input (the turn's text or a steer), not new content.
func (it Item) IsUserEcho() bool { return it.Type == ItemUserMessage }

// TurnEvents are streaming callbacks. They are called in order from the
// RunTurn goroutine, never from the stdout reader; nil funcs are fine. A
// slow callback delays only its own turn.
type TurnEvents struct {
	Started func(turnID string)
	Delta   func(delta string)
	// Progress reports the turn's work as it happens: plan updates, tool
	// items started and completed, reasoning summaries and retry notices
	// (progress.go).
	Progress func(Progress)
}

// notification is a routed server notification.
type notification struct {
	method string
	event  *turnEvent
}

// turnSub is the unbounded mailbox of the thread's running turn: the
// reader appends, the turn's goroutine drains. Nothing is ever dropped.
type turnSub struct {
	cn   *conn
	wake chan struct{} // capacity 1: "the queue is non-empty"

	mu    sync.Mutex
	queue []notification
	id    string

	idKnown chan struct{}
	idOnce  sync.Once

	// done is closed when the caller's RunTurn or Compact returned: Steer
	// and Interrupt no longer wait for it. freed is closed when the thread
	// no longer runs it (endTurn), which can be later: a turn its caller gave
	// up on is interrupted and waited for in the background (settle).
	done     chan struct{}
	freed    chan struct{}
	detached bool // settle owns it; touched only by the owner's goroutine
}

func newTurnSub(cn *conn) *turnSub {
	return &turnSub{cn: cn, wake: make(chan struct{}, 1), idKnown: make(chan struct{}),
		done: make(chan struct{}), freed: make(chan struct{})}
}

func (s *turnSub) push(n notification) {
	s.mu.Lock()
	s.queue = append(s.queue, n)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *turnSub) take() []notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

func (s *turnSub) setID(id string) {
	s.mu.Lock()
	if s.id == "" {
		s.id = id
	}
	s.mu.Unlock()
	s.idOnce.Do(func() { close(s.idKnown) })
}

func (s *turnSub) turnID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Wire shapes of the notifications a turn consumes.
type turnEvent struct {
	ThreadID   string          `json:"threadId"`
	TurnID     string          `json:"turnId"`
	Turn       *wireTurn       `json:"turn"`
	Item       json.RawMessage `json:"item"`
	ItemID     string          `json:"itemId"`
	Delta      string          `json:"delta"`
	Error      *wireTurnError  `json:"error"`
	WillRetry  bool            `json:"willRetry"`
	TokenUsage *wireTokenUsage `json:"tokenUsage"`
	RequestID  json.RawMessage `json:"requestId"` // serverRequest/resolved
	// turn/plan/updated; raw so that a plan of an unexpected shape cannot
	// make the whole notification undecodable
	Plan        json.RawMessage `json:"plan"`
	Explanation string          `json:"explanation"`
	// model/rerouted
	FromModel string `json:"fromModel"`
	ToModel   string `json:"toModel"`
	Reason    string `json:"reason"`
	Message   string `json:"message"` // guardianWarning
}

type wireTurn struct {
	ID     string            `json:"id"`
	Status string            `json:"status"`
	Error  *wireTurnError    `json:"error"`
	Items  []json.RawMessage `json:"items"`
}

type wireTurnError struct {
	Message        string          `json:"message"`
	CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
}

func (e *wireTurnError) toTurnError() *TurnError {
	if e == nil {
		return nil
	}
	info := ""
	if len(e.CodexErrorInfo) > 0 && string(e.CodexErrorInfo) != "null" {
		info = compactJSON(e.CodexErrorInfo)
	}
	return &TurnError{Message: e.Message, Info: info, Kind: errorKind(e.CodexErrorInfo)}
}

type wireItem struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Text    string `json:"text"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// parseItem decodes an item; userMessage text is its text content parts.
func parseItem(raw json.RawMessage) (Item, bool) {
	var w wireItem
	if err := json.Unmarshal(raw, &w); err != nil || w.Type == "" {
		return Item{}, false
	}
	it := Item{Type: w.Type, ID: w.ID, Raw: raw}
	switch w.Type {
	case ItemAgentMessage:
		it.Text = w.Text
	case ItemUserMessage:
		parts := make([]string, 0, len(w.Content))
		for _, p := range w.Content {
			if p.Type == "text" {
				parts = append(parts, p.Text)
			}
		}
		it.Text = strings.Join(parts, "\n")
	}
	return it, true
}

type wireTokenCounts struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

type wireTokenUsage struct {
	Total              wireTokenCounts `json:"total"`
	Last               wireTokenCounts `json:"last"`
	ModelContextWindow *int64          `json:"modelContextWindow"`
}

func (w *wireTokenUsage) toUsage() Usage {
	u := Usage{
		TotalTokens:           w.Total.TotalTokens,
		InputTokens:           w.Total.InputTokens,
		CachedInputTokens:     w.Total.CachedInputTokens,
		OutputTokens:          w.Total.OutputTokens,
		ReasoningOutputTokens: w.Total.ReasoningOutputTokens,
		LastTotalTokens:       w.Last.TotalTokens,
		Last:                  w.Last.counts(),
	}
	if w.ModelContextWindow != nil {
		u.ContextWindow = *w.ModelContextWindow
	}
	return u
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
