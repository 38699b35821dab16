package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"
)

// A thread's goal (thread/goal/set, get, clear; 0.171.0 schema): an
// objective codex keeps working on, turn after turn, until the model
// marks it complete, a token budget runs out or the user pauses or clears
// it. Codex drives it itself: once a goal is active and the thread idle,
// it starts continuation turns no client asked for (their last user
// message is a `<codex_internal_context source="goal">` block), and
// reports the goal's figures with thread/goal/updated after each of the
// model's answers. A turn/start sent while such a turn runs is folded
// into it: the answer names the running turn's id. The goal lives in
// codex's state database, so it is resumed with the thread.

// Goal statuses (ThreadGoalStatus).
const (
	GoalActive        = "active"
	GoalPaused        = "paused"
	GoalBlocked       = "blocked"
	GoalUsageLimited  = "usageLimited"
	GoalBudgetLimited = "budgetLimited"
	GoalComplete      = "complete"
)

// Goal is a thread's goal as codex reports it.
type Goal struct {
	ThreadID  string
	Objective string
	Status    string
	// TokenBudget is the budget in tokens; 0 when the goal has none.
	TokenBudget     int64
	TokensUsed      int64
	TimeUsedSeconds int64
}

type wireGoal struct {
	ThreadID        string `json:"threadId"`
	Objective       string `json:"objective"`
	Status          string `json:"status"`
	TokenBudget     *int64 `json:"tokenBudget"`
	TokensUsed      int64  `json:"tokensUsed"`
	TimeUsedSeconds int64  `json:"timeUsedSeconds"`
}

func (w *wireGoal) goal() Goal {
	g := Goal{ThreadID: w.ThreadID, Objective: w.Objective, Status: w.Status,
		TokensUsed: w.TokensUsed, TimeUsedSeconds: w.TimeUsedSeconds}
	if w.TokenBudget != nil {
		g.TokenBudget = *w.TokenBudget
	}
	return g
}

// SetGoal gives the loaded thread threadID a new goal with objective,
// replacing the one it had; budget > 0 limits the tokens codex may spend
// on it. The user set it (origin "user"): codex refuses a goal change it
// cannot attribute to the user.
func (c *Client) SetGoal(ctx context.Context, threadID, objective string, budget int64) (Goal, error) {
	params := map[string]any{"threadId": threadID, "objective": objective, "status": GoalActive, "origin": "user"}
	if budget > 0 {
		params["tokenBudget"] = budget
	}
	var out struct {
		Goal *wireGoal `json:"goal"`
	}
	if _, err := c.callLive(ctx, "thread/goal/set", params, &out); err != nil {
		return Goal{}, fmt.Errorf("codex: thread/goal/set: %w", err)
	}
	if out.Goal == nil {
		return Goal{}, fmt.Errorf("codex: thread/goal/set answered no goal")
	}
	return out.Goal.goal(), nil
}

// ThreadGoal reads the thread's goal; false when it has none.
func (c *Client) ThreadGoal(ctx context.Context, threadID string) (Goal, bool, error) {
	var out struct {
		Goal *wireGoal `json:"goal"`
	}
	if _, err := c.callLive(ctx, "thread/goal/get", map[string]any{"threadId": threadID}, &out); err != nil {
		return Goal{}, false, fmt.Errorf("codex: thread/goal/get: %w", err)
	}
	if out.Goal == nil {
		return Goal{}, false, nil
	}
	return out.Goal.goal(), true, nil
}

// ClearGoal removes the thread's goal; false when it had none.
func (c *Client) ClearGoal(ctx context.Context, threadID string) (bool, error) {
	var out struct {
		Cleared bool `json:"cleared"`
	}
	params := map[string]any{"threadId": threadID, "origin": "user"}
	if _, err := c.callLive(ctx, "thread/goal/clear", params, &out); err != nil {
		return false, fmt.Errorf("codex: thread/goal/clear: %w", err)
	}
	return out.Cleared, nil
}

// GoalUpdate is a thread/goal/updated or thread/goal/cleared notification.
type GoalUpdate struct {
	ThreadID string
	// TurnID is the turn whose work changed the figures; "" for a change
	// made outside a turn (set, cleared, the snapshot a resume sends).
	TurnID  string
	Goal    Goal // the zero Goal when Cleared
	Cleared bool
}

// AutoTurn is a turn that ended on a thread no RunTurn, Compact or
// Review waited for: one codex started on its own, as it does to keep
// working on a goal.
type AutoTurn struct {
	ThreadID, TurnID string
	Status           TurnStatus
	// Text is its last agent message ("" when it had none).
	Text string
}

// watchers are the functions hearing goal updates and auto turns. They
// are called on the stdout reader, in order, so they must not block.
type watchers struct {
	mu    sync.Mutex
	goals []func(GoalUpdate)
	turns []func(AutoTurn)
}

// OnGoal adds fn to what hears every thread's goal updates, in the order
// codex sent them. It may be called at any time; fn runs on the client's
// reader and must not block (hand slow work to a goroutine).
func (c *Client) OnGoal(fn func(GoalUpdate)) {
	c.watch.mu.Lock()
	defer c.watch.mu.Unlock()
	c.watch.goals = append(c.watch.goals, fn)
}

// OnAutoTurn adds fn to what hears the turns codex ran on its own (see
// AutoTurn); as for OnGoal, fn must not block.
func (c *Client) OnAutoTurn(fn func(AutoTurn)) {
	c.watch.mu.Lock()
	defer c.watch.mu.Unlock()
	c.watch.turns = append(c.watch.turns, fn)
}

func (w *watchers) goalFns() []func(GoalUpdate) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.goals
}

func (w *watchers) turnFns() []func(AutoTurn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.turns
}

// routeGoal hands thread/goal/updated and thread/goal/cleared to the
// goal watchers; it reports whether method was one of them.
func (c *Client) routeGoal(method string, params json.RawMessage) bool {
	var u GoalUpdate
	switch method {
	case "thread/goal/updated":
		var p struct {
			ThreadID string    `json:"threadId"`
			TurnID   *string   `json:"turnId"`
			Goal     *wireGoal `json:"goal"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.Goal == nil {
			c.log.Warn("codex.goal_unreadable", zap.Error(err))
			return true
		}
		u = GoalUpdate{ThreadID: p.ThreadID, TurnID: deref(p.TurnID), Goal: p.Goal.goal()}
		if u.ThreadID == "" {
			u.ThreadID = u.Goal.ThreadID
		}
	case "thread/goal/cleared":
		var p struct {
			ThreadID string `json:"threadId"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			c.log.Warn("codex.goal_unreadable", zap.Error(err))
			return true
		}
		u = GoalUpdate{ThreadID: p.ThreadID, Cleared: true}
	default:
		return false
	}
	for _, fn := range c.watch.goalFns() {
		fn(u)
	}
	return true
}

// autoTurnEnded reports a turn/completed no turn of ours read.
func (c *Client) autoTurnEnded(e *turnEvent) {
	fns := c.watch.turnFns()
	if len(fns) == 0 || e.Turn == nil {
		return
	}
	t := AutoTurn{ThreadID: e.ThreadID, TurnID: e.Turn.ID, Status: TurnStatus(e.Turn.Status)}
	for _, raw := range e.Turn.Items {
		if it, ok := parseItem(raw); ok && it.Type == ItemAgentMessage && strings.TrimSpace(it.Text) != "" {
			t.Text = it.Text
		}
	}
	for _, fn := range fns {
		fn(t)
	}
}
