// Package goal is /goal: a lane's Codex thread given an objective that
// codex keeps working on, turn after turn, until it is met, its token
// budget runs out or it is paused ("keep going until the tests pass, but
// stop at N tokens"). The goal is codex's (thread/goal/*): it lives with
// the thread, so it survives a restart and is resumed with it. Codex runs
// the goal's turns on its own, between the lane's; this package relays
// their answers to the lane, tells the lane once when the goal ends, and
// lists the goals it knows for the web console (Goals).
package goal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// callTimeout bounds each call to codex: commands run on the platform's
// delivery goroutine or in the lane's order.
const callTimeout = 10 * time.Second

const usageText = "Usage: /goal TEXT [budget TOKENS] gives this conversation's Codex thread a goal it keeps working on; " +
	"/goal shows it; /goal off clears it."

// Store is the lane's row: its thread.
type Store interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
}

// Runtime is codex's goals, and the turns it runs on its own for them.
type Runtime interface {
	SetGoal(ctx context.Context, threadID, objective string, budget int64) (codex.Goal, error)
	ThreadGoal(ctx context.Context, threadID string) (codex.Goal, bool, error)
	ClearGoal(ctx context.Context, threadID string) (bool, error)
	OnGoal(fn func(codex.GoalUpdate))
	OnAutoTurn(fn func(codex.AutoTurn))
}

var (
	_ Store   = (*store.Store)(nil)
	_ Runtime = (*codex.Client)(nil)
)

// Goals is /goal.
type Goals struct {
	st   Store
	cx   Runtime
	host ext.Host
	log  *zap.Logger
	out  *ext.Serial[notice]

	// maxBudget is lanes.budget_tokens_per_day (0: none): codex's goal
	// turns are not the lane's own turns, so the daily budget cannot stop
	// them; a goal must then carry a budget of at most one day's.
	maxBudget int64

	mu sync.Mutex
	// known are the goals codex reported, by thread: what the console
	// lists and what tells a goal's end apart from a repeat of it.
	known map[string]codex.Goal
}

// New is /goal over st and cx.
func New(st Store, cx Runtime) *Goals {
	return &Goals{st: st, cx: cx, log: zap.NewNop(), known: make(map[string]codex.Goal)}
}

// WithDailyBudget makes every goal carry a token budget of at most
// perDay (lanes.budget_tokens_per_day; 0 leaves goals unbounded).
func (g *Goals) WithDailyBudget(perDay int64) *Goals {
	g.maxBudget = perDay
	return g
}

// Name is the feature's name.
func (g *Goals) Name() string { return "goal" }

// Register adds /goal and listens to codex's goal updates and the turns
// it runs on its own.
func (g *Goals) Register(h ext.Host) error {
	g.host, g.log = h, h.Logger()
	g.out = ext.NewSerial(func(n notice) { h.Notify(h.Context(), n.addr, "", n.text) })
	h.Command(ext.Command{Name: "goal", Args: "[TEXT [budget TOKENS] | off]", Menu: true,
		Description: "Give Codex a goal to keep working on, show it, or clear it",
		Run:         g.run})
	g.cx.OnGoal(g.updated)
	g.cx.OnAutoTurn(g.autoTurn)
	return nil
}

// run is /goal, /goal off and /goal TEXT [budget TOKENS].
func (g *Goals) run(ctx context.Context, c ext.Call) bool {
	args := strings.TrimSpace(c.Args)
	if strings.EqualFold(args, "off") {
		return g.inThread(ctx, c, g.clear)
	}
	if args == "" {
		if thread := g.loadedThread(ctx, c.Lane); thread != "" {
			g.host.Notify(ctx, c.Lane.Address(), c.MsgID, g.show(ctx, c.Lane, thread))
			return true
		}
		return g.inThread(ctx, c, g.show)
	}
	objective, budget, ok := ParseArgs(args)
	if !ok {
		g.host.Notify(ctx, c.Lane.Address(), c.MsgID, usageText)
		return true
	}
	if g.maxBudget > 0 && (budget == 0 || budget > g.maxBudget) {
		g.host.Notify(ctx, c.Lane.Address(), c.MsgID, fmt.Sprintf(
			"This conversation has a daily budget of %d tokens: give the goal a budget of at most that, e.g. /goal %s budget %d",
			g.maxBudget, ext.QuoteStart(objective, 80), g.maxBudget))
		return true
	}
	return g.inThread(ctx, c, func(ctx context.Context, l ext.Lane, thread string) string {
		return g.set(ctx, l, thread, objective, budget)
	})
}

// inThread runs act on the lane's thread between its turns, loading it as
// a turn would (after a restart that resumes it, and its goal with it).
func (g *Goals) inThread(ctx context.Context, c ext.Call, act func(ctx context.Context, l ext.Lane, thread string) string) bool {
	return ext.BetweenTurns(ctx, g.host, c, func(ctx context.Context) {
		thread, err := c.Lane.LoadThread(ctx)
		var text string
		switch {
		case errors.Is(err, ext.ErrNoThread):
			text = "This conversation has no Codex thread yet: send a first message, then /goal."
		case err != nil:
			g.log.Warn("goal.load_failed", zap.String("lane", c.Lane.Key()), zap.Error(err))
			text = "Could not load this conversation's Codex thread: " + ext.BriefError(err)
		default:
			text = act(ctx, c.Lane, thread)
		}
		g.host.Notify(ctx, c.Lane.Address(), c.MsgID, text)
	})
}

// loadedThread is the lane's thread when the app-server has it loaded
// for this lane ("" otherwise).
func (g *Goals) loadedThread(ctx context.Context, l ext.Lane) string {
	thread, err := ext.LoadedThread(ctx, g.host, g.st, l)
	if err != nil {
		g.log.Warn("goal.lane_failed", zap.String("lane", l.Key()), zap.Error(err))
	}
	return thread
}

func (g *Goals) set(ctx context.Context, l ext.Lane, thread, objective string, budget int64) string {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	goal, err := g.cx.SetGoal(cctx, thread, objective, budget)
	if err != nil {
		g.log.Warn("goal.set_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not set the goal: " + ext.BriefCodexError(err)
	}
	g.remember(goal)
	g.log.Info("goal.set", zap.String("lane", l.Key()), zap.String("thread", thread), zap.Int64("budget", budget))
	text := "Goal set: " + ext.QuoteStart(goal.Objective, objectiveMax)
	if goal.TokenBudget > 0 {
		text += " (budget " + Tokens(goal.TokenBudget) + " tokens)"
	}
	return text + ". Codex keeps working on it between your messages; /goal shows it, /goal off clears it."
}

func (g *Goals) show(ctx context.Context, l ext.Lane, thread string) string {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	goal, ok, err := g.cx.ThreadGoal(cctx, thread)
	if err != nil {
		g.log.Warn("goal.get_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not read the goal: " + ext.BriefCodexError(err)
	}
	if !ok {
		return "This conversation has no goal. " + usageText
	}
	g.remember(goal)
	return ShowText(goal)
}

func (g *Goals) clear(ctx context.Context, l ext.Lane, thread string) string {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cleared, err := g.cx.ClearGoal(cctx, thread)
	if err != nil {
		g.log.Warn("goal.clear_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not clear the goal: " + ext.BriefCodexError(err)
	}
	g.forget(thread)
	if !cleared {
		return "This conversation has no goal."
	}
	g.log.Info("goal.cleared", zap.String("lane", l.Key()), zap.String("thread", thread))
	return "Goal cleared: Codex stops working on it."
}

func (g *Goals) remember(goal codex.Goal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.known[goal.ThreadID] = goal
}

func (g *Goals) forget(thread string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.known, thread)
}

// updated hears codex's goal updates (on the client's reader: it must not
// block). A goal that leaves active within a turn is told to its lane
// once, with its figures; codex repeats an ended goal's status with each
// later update, and a resume's snapshot (no turn) only says what it is.
func (g *Goals) updated(u codex.GoalUpdate) {
	if u.Cleared {
		g.forget(u.ThreadID)
		return
	}
	g.mu.Lock()
	prev, had := g.known[u.ThreadID]
	g.known[u.ThreadID] = u.Goal
	g.mu.Unlock()
	if u.TurnID == "" || u.Goal.Status == codex.GoalActive || (had && prev.Status == u.Goal.Status) {
		return
	}
	lane, ok := g.host.LaneOfThread(u.ThreadID)
	if !ok {
		g.log.Info("goal.ended_without_lane", zap.String("thread", u.ThreadID), zap.String("status", u.Goal.Status))
		return
	}
	g.log.Info("goal.ended", zap.String("lane", lane.Key()), zap.String("status", u.Goal.Status),
		zap.Int64("tokens_used", u.Goal.TokensUsed), zap.Int64("budget", u.Goal.TokenBudget))
	g.out.Push(notice{lane.Address(), EndText(u.Goal)})
}

// autoTurn relays the answer of a turn codex ran on its own (a goal's
// continuation): the lane asked for none, and would otherwise never see
// what codex did.
func (g *Goals) autoTurn(t codex.AutoTurn) {
	lane, ok := g.host.LaneOfThread(t.ThreadID)
	if !ok {
		g.log.Info("goal.turn_without_lane", zap.String("thread", t.ThreadID), zap.String("turn", t.TurnID))
		return
	}
	g.log.Info("goal.turn", zap.String("lane", lane.Key()), zap.String("turn", t.TurnID), zap.String("status", string(t.Status)))
	text := strings.TrimSpace(t.Text)
	switch {
	case text != "":
		g.out.Push(notice{lane.Address(), text})
	case t.Status == codex.TurnFailed:
		g.out.Push(notice{lane.Address(), "Codex's turn on the goal failed."})
	}
}

// LaneGoals are the goals codex reported since the daemon started, or
// that /goal read, by the session key of the lane whose thread has it:
// the web console's list (webconsole.GoalSource). A goal of a thread no
// lane has loaded is left out.
func (g *Goals) LaneGoals(context.Context) map[string]codex.Goal {
	g.mu.Lock()
	goals := make([]codex.Goal, 0, len(g.known))
	for _, goal := range g.known {
		goals = append(goals, goal)
	}
	g.mu.Unlock()
	out := make(map[string]codex.Goal, len(goals))
	for _, goal := range goals {
		if lane, ok := g.host.LaneOfThread(goal.ThreadID); ok {
			out[lane.Key()] = goal
		}
	}
	return out
}

// objectiveMax is how much of an objective a notice quotes.
const objectiveMax = 200

// ParseArgs reads "/goal TEXT [budget TOKENS]": the objective, and the
// budget when the text ends with "budget N" (N a whole number, "50k" or
// "2m" allowed). ok is false for no objective or a budget that is not
// a positive number.
func ParseArgs(args string) (objective string, budget int64, ok bool) {
	args = strings.TrimSpace(args)
	fields := strings.Fields(args)
	if n := len(fields); n >= 2 && strings.EqualFold(fields[n-2], "budget") {
		b, err := parseTokens(fields[n-1])
		if err != nil || b <= 0 {
			return "", 0, false
		}
		budget = b
		// Cut at the "budget" word as written: the objective keeps its
		// spacing. (An index into the lowercased text would be off where
		// lowercasing changes a character's length.) The number after it
		// parsed, so it holds no "budget" for LastIndex to find instead.
		args = strings.TrimSpace(args[:strings.LastIndex(args, fields[n-2])])
	}
	if args == "" {
		return "", 0, false
	}
	return args, budget, true
}

func parseTokens(s string) (int64, error) {
	mult := int64(1)
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mult, s = 1_000, s[:len(s)-1]
	case "m":
		mult, s = 1_000_000, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("goal: budget %q: %w", s, err)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("goal: budget %q is too large", s)
	}
	return n * mult, nil
}

// ShowText is /goal's answer about goal.
func ShowText(goal codex.Goal) string {
	return "Goal (" + statusWords(goal.Status) + "): " + ext.QuoteStart(goal.Objective, objectiveMax) + "\n" + Figures(goal)
}

// EndText tells a lane that its goal left active.
func EndText(goal codex.Goal) string {
	var head string
	switch goal.Status {
	case codex.GoalComplete:
		head = "Goal met"
	case codex.GoalBudgetLimited:
		head = "Goal stopped: out of its token budget"
	case codex.GoalPaused:
		head = "Goal paused"
	case codex.GoalBlocked:
		head = "Goal blocked: Codex cannot go on without you"
	case codex.GoalUsageLimited:
		head = "Goal stopped: the account's usage limit was reached"
	default:
		head = "Goal " + statusWords(goal.Status)
	}
	return head + ": " + ext.QuoteStart(goal.Objective, objectiveMax) + "\n" + Figures(goal)
}

// Figures are a goal's tokens used, of its budget, and time spent.
func Figures(goal codex.Goal) string {
	text := Tokens(goal.TokensUsed) + " tokens used"
	if goal.TokenBudget > 0 {
		text += " of a budget of " + Tokens(goal.TokenBudget)
	}
	if goal.TimeUsedSeconds > 0 {
		text += ", " + (time.Duration(goal.TimeUsedSeconds) * time.Second).String()
	}
	return text + "."
}

// Tokens is n with thousands separated: 116,158.
func Tokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func statusWords(status string) string {
	switch status {
	case codex.GoalActive:
		return "active"
	case codex.GoalPaused:
		return "paused"
	case codex.GoalBlocked:
		return "blocked"
	case codex.GoalUsageLimited:
		return "stopped at the usage limit"
	case codex.GoalBudgetLimited:
		return "out of budget"
	case codex.GoalComplete:
		return "met"
	}
	return status
}

// notice is one the feature sends, in order, off the client's reader
// (Notify writes the outbox and may wait on the database).
type notice struct {
	addr chat.Address
	text string
}
