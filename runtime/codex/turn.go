package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
)

// TurnInput is what one turn/start carries besides the thread id. It is a
// struct so that new kinds of input (images, files) are new fields, not a
// new signature.
type TurnInput struct {
	Text string
	// Cwd, when set, moves the thread's working directory for this turn
	// and the later ones (docs/codex-app-server.md §11); a resumed thread keeps it. With the
	// workspace-write sandbox the writable root follows it.
	Cwd string
	// Images are absolute paths of image files sent with the text, each a
	// localImage input item after it (docs/codex-app-server.md §11): the model sees them as
	// input_image parts.
	Images []string
	// Model and Effort, when set, choose the model and reasoning effort
	// for this turn and the later ones (models.go); "" leaves them as the
	// thread has them.
	Model, Effort string
	// Mode, when set (ModePlan, ModeDefault), is the collaboration mode of
	// this turn and the later ones (questions.go); it needs Model.
	Mode string
	// Confine keeps the turn inside the lane's directories (isolation.go).
	Confine Confinement
}

// params is the turn/start request for threadID.
func (in TurnInput) params(threadID string) map[string]any {
	input := textInput(in.Text)
	for _, path := range in.Images {
		input = append(input, map[string]any{"type": "localImage", "path": path})
	}
	p := map[string]any{"threadId": threadID, "input": input}
	if in.Cwd != "" {
		p["cwd"] = in.Cwd
	}
	in.Confine.turnParams(p)
	in.modelParams(p)
	in.collaborationParams(p)
	return p
}

// RunTurn starts a turn with in on a thread loaded by EnsureThread and
// waits for turn/completed. Deltas stream to ev in order.
//
//   - Only one turn (or compaction) runs per thread: ErrTurnActive otherwise.
//   - A thread not loaded in the current process: ErrThreadNotLoaded.
//   - After TurnTimeout the watchdog sends turn/interrupt, sets
//     WatchdogFired and waits up to InterruptGrace for turn/completed;
//     without one it returns ErrTimeout.
//   - ctx cancellation interrupts the same way; the result is filled in
//     and the error wraps ctx.Err().
//   - If ctx ends or StartTimeout expires before turn/start is answered,
//     RunTurn returns at once, but the turn the server may still start is
//     not left running: it is interrupted when its id arrives.
//   - Whenever RunTurn returns before turn/completed while the server may
//     still run the turn, the thread stays busy (ErrTurnActive) until that
//     turn completes, the process dies or a bound expires (see settle).
//   - If the process dies: ErrProcessDied, with what was streamed so far.
func (c *Client) RunTurn(ctx context.Context, threadID string, in TurnInput, ev TurnEvents) (TurnResult, error) {
	return c.runStarted(ctx, threadID, "turn/start", in.params(threadID), ev)
}

// runStarted starts a turn with method (turn/start, review/start) and
// waits for it as RunTurn documents.
func (c *Client) runStarted(ctx context.Context, threadID, method string, params map[string]any, ev TurnEvents) (TurnResult, error) {
	res := TurnResult{ThreadID: threadID}
	ts, sub, err := c.beginTurn(threadID)
	if err != nil {
		return res, err
	}
	defer ts.leave(sub)
	before, hadBefore := ts.lastUsage()

	var out turnStarted
	err = c.startTurn(ctx, ts, sub, method, params, &out)
	if err != nil {
		return res, err
	}
	res.TurnID = out.Turn.ID
	sub.setID(res.TurnID)
	if ev.Started != nil {
		ev.Started(res.TurnID)
	}
	col := &collector{log: c.log, res: &res, ev: ev, turnID: res.TurnID, seen: map[string]bool{}}
	col.before, col.hadBefore = before, hadBefore
	err = c.await(ctx, ts, sub, col)
	return res, err
}

// turnStarted is the result of turn/start ({} for thread/compact/start).
type turnStarted struct {
	Turn struct {
		ID string `json:"id"`
	} `json:"turn"`
}

// startTurn sends method (turn/start or thread/compact/start) and waits up
// to StartTimeout, or until ctx ends, for its answer. If it stops waiting
// first, the server may still start the turn: the call is handed to settle,
// which keeps the thread busy, interrupts the turn and waits for its end.
func (c *Client) startTurn(ctx context.Context, ts *threadState, sub *turnSub, method string, params any, out *turnStarted) error {
	pc, err := sub.cn.start(method, params)
	if err != nil {
		return c.closedOr(err)
	}
	sctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	err = pc.wait(sctx, out)
	cancel()
	switch {
	case err == nil:
		pc.forget()
		return nil
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		c.log.Warn("codex.turn_start_abandoned", zap.String("thread_id", ts.id), zap.String("method", method), zap.Error(err))
		c.detach(sub, func() { c.settleStart(ts, sub, pc) })
		return err
	default:
		pc.forget()
		if errors.Is(err, ErrThreadNotLoaded) {
			ts.markNotLoaded()
		}
		return c.closedOr(err)
	}
}

// settleStart waits up to InterruptGrace for the answer its caller gave up
// on; a turn that started anyway is interrupted and waited for.
func (c *Client) settleStart(ts *threadState, sub *turnSub, pc *pendingCall) {
	defer pc.forget()
	ctx, cancel := context.WithTimeout(sub.cn.ctx, c.opts.InterruptGrace)
	var out turnStarted
	err := pc.wait(ctx, &out)
	cancel()
	if err != nil {
		if errors.Is(err, ErrThreadNotLoaded) {
			ts.markNotLoaded()
		}
		c.log.Info("codex.abandoned_start_failed", zap.String("thread_id", ts.id), zap.Error(err))
		ts.endTurn(sub)
		return
	}
	col := &collector{log: c.log, res: &TurnResult{}, seen: map[string]bool{}, turnID: out.Turn.ID}
	if out.Turn.ID != "" {
		sub.setID(out.Turn.ID)
	} else {
		col.adopt = sub // a compaction: its id comes with turn/started
	}
	c.settle(ts, sub, col, true, c.opts.InterruptGrace)
}

// detach hands the turn to settle: the caller returns, the thread stays
// busy until settle ends the turn. Called only from the turn's owner.
func (c *Client) detach(sub *turnSub, settle func()) {
	sub.detached = true
	go settle()
}

// settle owns a turn whose caller returned before turn/completed. It sends
// turn/interrupt if asked and keeps the thread busy until the turn's
// turn/completed, the process's death or bound, so that no second turn
// starts while the server still runs this one. Nobody sees its result.
func (c *Client) settle(ts *threadState, sub *turnSub, col *collector, interrupt bool, bound time.Duration) {
	defer ts.endTurn(sub)
	if interrupt {
		go c.sendInterrupt(ts.id, sub)
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	for {
		if col.drain(sub) {
			c.log.Info("codex.abandoned_turn_ended", zap.String("thread_id", ts.id),
				zap.String("turn_id", col.turnID), zap.String("status", string(col.res.Status)))
			return
		}
		select {
		case <-sub.wake:
		case <-sub.cn.dead:
			return
		case <-t.C:
			c.log.Error("codex.abandoned_turn_never_completed", zap.String("thread_id", ts.id),
				zap.String("turn_id", sub.turnID()), zap.Duration("waited", bound))
			return
		}
	}
}

func textInput(text string) []map[string]any {
	return []map[string]any{{"type": "text", "text": text, "text_elements": []any{}}}
}

// beginTurn registers the thread's turn mailbox; from here on every
// notification for the thread is queued for it.
func (c *Client) beginTurn(threadID string) (*threadState, *turnSub, error) {
	ts := c.lookup(threadID)
	if ts == nil {
		return nil, nil, fmt.Errorf("codex: thread %s: %w", threadID, ErrThreadNotLoaded)
	}
	cn, err := c.current()
	if err != nil {
		return nil, nil, err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if !cn.alive() || ts.loadedEpoch != cn.epoch {
		return nil, nil, fmt.Errorf("codex: thread %s: %w", threadID, ErrThreadNotLoaded)
	}
	if ts.turn != nil {
		return nil, nil, fmt.Errorf("codex: thread %s: %w", threadID, ErrTurnActive)
	}
	ts.turn = newTurnSub(cn)
	return ts, ts.turn, nil
}

// leave is deferred by the turn's owner (RunTurn, Compact): Steer and
// Interrupt stop waiting for the turn, and the thread is free again unless
// settle took the turn over.
func (ts *threadState) leave(sub *turnSub) {
	close(sub.done)
	if !sub.detached {
		ts.endTurn(sub)
	}
}

// endTurn frees the thread for the next turn; called once per turn.
func (ts *threadState) endTurn(sub *turnSub) {
	ts.mu.Lock()
	if ts.turn == sub {
		ts.turn = nil
	}
	ts.mu.Unlock()
	close(sub.freed)
}

func (ts *threadState) activeTurn() *turnSub {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.turn
}

// await drains the turn's mailbox until turn/completed, handling the
// watchdog, ctx cancellation and process death.
func (c *Client) await(ctx context.Context, ts *threadState, sub *turnSub, col *collector) error {
	watchdog := time.NewTimer(c.opts.TurnTimeout)
	defer watchdog.Stop()
	var grace <-chan time.Time
	interrupt := func() {
		if grace == nil {
			grace = time.After(c.opts.InterruptGrace)
			go c.sendInterrupt(ts.id, sub)
		}
	}
	ctxDone := ctx.Done()
	var ctxErr error
	for {
		if col.drain(sub) {
			col.finish(ts)
			if ctxErr != nil {
				return fmt.Errorf("codex: turn %s: %w", col.turnID, ctxErr)
			}
			return nil
		}
		select {
		case <-sub.wake:
		case <-sub.cn.dead:
			if col.drain(sub) { // turn/completed may have been read just before
				col.finish(ts)
				return nil
			}
			col.finish(ts)
			return fmt.Errorf("codex: turn %s: %w", col.turnID, c.closedOr(sub.cn.err()))
		case <-watchdog.C:
			col.res.WatchdogFired = true
			c.log.Warn("codex.turn_watchdog", zap.String("thread_id", ts.id),
				zap.String("turn_id", sub.turnID()), zap.Duration("timeout", c.opts.TurnTimeout))
			interrupt()
		case <-ctxDone:
			ctxErr, ctxDone = ctx.Err(), nil
			interrupt()
		case <-grace:
			col.finish(ts)
			// The server may still run the turn: keep the thread busy until
			// it ends, for at most another TurnTimeout.
			tail := &collector{log: c.log, res: &TurnResult{}, seen: map[string]bool{}, turnID: col.turnID}
			again := col.turnID == "" // a compaction whose id never came: interrupt once it does
			if again {
				tail.adopt = sub
			}
			c.detach(sub, func() { c.settle(ts, sub, tail, again, c.opts.TurnTimeout) })
			return fmt.Errorf("codex: turn %s: no turn/completed %s after turn/interrupt: %w",
				sub.turnID(), c.opts.InterruptGrace, ErrTimeout)
		}
	}
}

// sendInterrupt asks the server to interrupt the turn; turn/completed
// (status interrupted) is what ends the wait, not this call's answer.
func (c *Client) sendInterrupt(threadID string, sub *turnSub) {
	ctx, cancel := context.WithTimeout(sub.cn.ctx, c.opts.InterruptGrace)
	defer cancel()
	select {
	case <-sub.idKnown: // a compaction learns its turn id from turn/started
	case <-ctx.Done():
		return
	}
	err := sub.cn.call(ctx, "turn/interrupt", map[string]any{"threadId": threadID, "turnId": sub.turnID()}, nil)
	if err != nil && !errors.Is(err, ErrNoActiveTurn) {
		c.log.Warn("codex.interrupt_failed", zap.String("thread_id", threadID), zap.Error(err))
	}
}

// Interrupt interrupts the thread's running turn (or compaction). RunTurn
// then returns with status interrupted. ErrNoActiveTurn if none runs.
func (c *Client) Interrupt(ctx context.Context, threadID string) error {
	sub, err := c.runningTurn(ctx, threadID)
	if err != nil {
		return err
	}
	return sub.cn.call(ctx, "turn/interrupt", map[string]any{"threadId": threadID, "turnId": sub.turnID()}, nil)
}

// Steer adds text to the running turn (turn/steer with expectedTurnId).
// codex drops the partial agent message in flight. ErrNoActiveTurn if none
// runs (the caller should then start a new turn). ErrTurnMismatch if the
// server's active turn is not the one this client runs: the text was not
// delivered, and steering into a turn we do not own would be wrong, so it
// is not retried with the server's id.
func (c *Client) Steer(ctx context.Context, threadID, text string) error {
	sub, err := c.runningTurn(ctx, threadID)
	if err != nil {
		return err
	}
	params := map[string]any{"threadId": threadID, "expectedTurnId": sub.turnID(), "input": textInput(text)}
	return sub.cn.call(ctx, "turn/steer", params, nil)
}

// runningTurn returns the thread's running turn once its id is known.
// ErrNoActiveTurn if there is none, or once its caller has returned
// (including a turn that ended without ever getting an id); a turn left to
// settle is already being interrupted.
func (c *Client) runningTurn(ctx context.Context, threadID string) (*turnSub, error) {
	if _, err := c.current(); err != nil {
		return nil, err
	}
	ts := c.lookup(threadID)
	if ts == nil {
		return nil, fmt.Errorf("codex: thread %s: %w", threadID, ErrNoActiveTurn)
	}
	sub := ts.activeTurn()
	if sub == nil {
		return nil, fmt.Errorf("codex: thread %s: %w", threadID, ErrNoActiveTurn)
	}
	select {
	case <-sub.idKnown:
		select {
		case <-sub.done:
			return nil, fmt.Errorf("codex: thread %s: %w", threadID, ErrNoActiveTurn)
		default:
			return sub, nil
		}
	case <-sub.done: // it ended (or its caller gave up) without ever getting an id
		return nil, fmt.Errorf("codex: thread %s: %w", threadID, ErrNoActiveTurn)
	case <-sub.cn.dead:
		return nil, fmt.Errorf("codex: thread %s: %w", threadID, c.closedOr(sub.cn.err()))
	case <-ctx.Done():
		return nil, fmt.Errorf("codex: thread %s: waiting for turn id: %w", threadID, ctx.Err())
	}
}

// Compact runs native compaction (thread/compact/start) and waits for the
// contextCompaction item and the compaction turn's turn/completed. before is
// the usage known when it started, after the usage known when it ended.
// The turn watchdog applies as for RunTurn, and so does the rule that a
// compaction its caller stopped waiting for keeps the thread busy until it
// ends.
func (c *Client) Compact(ctx context.Context, threadID string) (before, after Usage, err error) {
	ts, sub, err := c.beginTurn(threadID)
	if err != nil {
		return before, after, err
	}
	defer ts.leave(sub)
	before, hadBefore := ts.lastUsage()

	var out turnStarted
	if err := c.startTurn(ctx, ts, sub, "thread/compact/start", map[string]any{"threadId": threadID}, &out); err != nil {
		return before, after, err
	}
	var res TurnResult
	col := &collector{log: c.log, res: &res, seen: map[string]bool{}, adopt: sub, before: before, hadBefore: hadBefore}
	if err := c.await(ctx, ts, sub, col); err != nil {
		return before, res.Usage, err
	}
	if res.Status != TurnCompleted {
		msg := ""
		if res.Error != nil {
			msg = ": " + res.Error.Message
		}
		return before, res.Usage, fmt.Errorf("codex: compaction of %s ended %s%s", threadID, res.Status, msg)
	}
	if !col.compacted {
		return before, res.Usage, fmt.Errorf("codex: compaction of %s completed without a contextCompaction item", threadID)
	}
	return before, res.Usage, nil
}

// collector folds one turn's notifications into a TurnResult.
type collector struct {
	log    *zap.Logger
	res    *TurnResult
	ev     TurnEvents
	turnID string   // "" until known (compaction adopts it from turn/started)
	adopt  *turnSub // set for compaction: publish the adopted id

	partial    strings.Builder // deltas of the agent message in flight
	agentTexts []string        // completed agent messages, in order
	seen       map[string]bool // item ids already in res.Items
	gotUsage   bool
	compacted  bool
	// before is the thread's usage when the turn began, from which the
	// turn's own spend is computed (hadBefore: it was known).
	before      Usage
	hadBefore   bool
	finalStatus bool
}

// drain handles queued notifications; it reports whether the turn ended.
func (col *collector) drain(sub *turnSub) bool {
	for _, n := range sub.take() {
		if col.handle(n) {
			return true
		}
	}
	return false
}

func (col *collector) handle(n notification) bool {
	e := n.event
	id := e.TurnID
	if id == "" && e.Turn != nil {
		id = e.Turn.ID
	}
	if col.turnID == "" && n.method == "turn/started" && id != "" && col.adopt != nil {
		col.turnID = id
		col.res.TurnID = id
		col.adopt.setID(id)
	}
	if id != "" && id != col.turnID {
		return false // a previous turn's straggler
	}
	if col.ev.Progress != nil {
		if p, ok := progressOf(n.method, e); ok {
			col.ev.Progress(p)
		}
	}
	switch n.method {
	case "item/agentMessage/delta":
		col.partial.WriteString(e.Delta)
		if col.ev.Delta != nil {
			col.ev.Delta(e.Delta)
		}
	case "item/completed":
		col.itemCompleted(e.Item)
	case "thread/tokenUsage/updated":
		if e.TokenUsage != nil {
			col.res.Usage, col.gotUsage = e.TokenUsage.toUsage(), true
		}
	case "error":
		col.progressOrError(e)
	case "turn/completed":
		if e.Turn != nil {
			col.completed(e.Turn)
			return true
		}
	}
	return false
}

func (col *collector) itemCompleted(raw json.RawMessage) {
	it, ok := parseItem(raw)
	if !ok {
		return
	}
	switch it.Type {
	case ItemAgentMessage:
		col.agentTexts = append(col.agentTexts, it.Text)
		col.partial.Reset()
	case ItemUserMessage:
		col.partial.Reset() // a steer: codex discards the partial in flight
	case ItemContextCompaction:
		col.compacted = true
	}
	col.addItem(it)
}

func (col *collector) addItem(it Item) {
	if it.ID != "" {
		if col.seen[it.ID] {
			return
		}
		col.seen[it.ID] = true
	}
	col.res.Items = append(col.res.Items, it)
}

func (col *collector) progressOrError(e *turnEvent) {
	msg := ""
	if e.Error != nil {
		msg = e.Error.Message
	}
	if e.WillRetry {
		col.log.Info("codex.turn_retrying", zap.String("turn_id", col.turnID), zap.String("message", msg))
		return
	}
	col.log.Warn("codex.turn_error", zap.String("turn_id", col.turnID), zap.String("message", msg))
}

func (col *collector) completed(t *wireTurn) {
	col.finalStatus = true
	col.res.Status = TurnStatus(t.Status)
	col.res.Error = t.Error.toTurnError()
	finalText := ""
	for _, raw := range t.Items {
		if it, ok := parseItem(raw); ok {
			if it.Type == ItemAgentMessage {
				finalText = it.Text
			}
			if it.Type == ItemContextCompaction {
				col.compacted = true
			}
			col.addItem(it)
		}
	}
	switch {
	case col.res.Status == TurnInterrupted:
		col.res.Text = col.streamed()
	case finalText != "":
		col.res.Text = finalText
	case len(col.agentTexts) > 0:
		col.res.Text = col.agentTexts[len(col.agentTexts)-1]
	default:
		col.res.Text = col.partial.String()
	}
}

// streamed is everything the agent said in this turn, including the
// cut-off partial message.
func (col *collector) streamed() string {
	parts := append([]string(nil), col.agentTexts...)
	if col.partial.Len() > 0 {
		parts = append(parts, col.partial.String())
	}
	return strings.Join(parts, "\n\n")
}

// finish fills what a turn that did not complete normally still has: the
// streamed text and the thread's last usage.
func (col *collector) finish(ts *threadState) {
	if !col.finalStatus && col.res.Text == "" {
		col.res.Text = col.streamed()
	}
	if !col.gotUsage {
		col.res.Usage, _ = ts.lastUsage()
		return
	}
	col.res.Usage.Turn = turnSpend(col.before, col.res.Usage, col.hadBefore)
}
