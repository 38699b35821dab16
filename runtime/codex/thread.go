package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/internal/backoff"
)

// ThreadConfig are the per-thread overrides sent with thread/start and
// thread/resume; empty fields are omitted (the process config applies).
type ThreadConfig struct {
	Cwd, Model, Sandbox, ApprovalPolicy, DeveloperInstructions string
	// DynamicTools are registered with thread/start only: thread/resume
	// takes none, and a resumed thread keeps the tools it started with
	// (docs/codex-app-server.md §11). Options.ToolCall serves them.
	DynamicTools []DynamicTool
	// Confine, when set, confines the thread's commands and file tools to
	// the lane's own directories (isolation.go); it replaces Sandbox, and
	// is sent with thread/resume as with thread/start, since codex keeps
	// no per-thread config across a restart.
	Confine Confinement
}

// startParams are the params of thread/start: the overrides and the
// dynamic tools.
func (cfg ThreadConfig) startParams() map[string]any {
	params := cfg.params(map[string]any{})
	if len(cfg.DynamicTools) > 0 {
		specs := make([]map[string]any, 0, len(cfg.DynamicTools))
		for _, t := range cfg.DynamicTools {
			specs = append(specs, t.spec())
		}
		params["dynamicTools"] = specs
	}
	return params
}

func (cfg ThreadConfig) params(base map[string]any) map[string]any {
	for key, v := range map[string]string{
		"cwd":                   cfg.Cwd,
		"model":                 cfg.Model,
		"sandbox":               cfg.Sandbox,
		"approvalPolicy":        cfg.ApprovalPolicy,
		"developerInstructions": cfg.DeveloperInstructions,
	} {
		if v != "" {
			base[key] = v
		}
	}
	cfg.Confine.threadParams(base)
	return base
}

// Outcome says how EnsureThread made the thread usable.
type Outcome int

// Outcomes of EnsureThread.
const (
	OutcomeLoaded   Outcome = iota // already loaded in the current process: no RPC
	OutcomeResumed                 // thread/resume succeeded
	OutcomeStarted                 // no stored id: thread/start
	OutcomeReplaced                // stored id refused: new thread started
)

func (o Outcome) String() string {
	switch o {
	case OutcomeLoaded:
		return "loaded"
	case OutcomeResumed:
		return "resumed"
	case OutcomeStarted:
		return "started"
	case OutcomeReplaced:
		return "replaced"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Ensured is the result of EnsureThread. For OutcomeReplaced, PreviousID is
// the refused id and Reason the app-server's refusal, to tell the user once.
type Ensured struct {
	ThreadID   string
	Outcome    Outcome
	PreviousID string
	Reason     string
}

// threadState is what the client knows about one thread.
type threadState struct {
	id       string
	ensureMu sync.Mutex // serialises EnsureThread and Release per thread

	mu          sync.Mutex
	loadedEpoch int64    // epoch of the process that loaded it; 0 = not loaded
	usage       Usage    // last thread/tokenUsage/updated
	hasUsage    bool     // whether usage was ever reported
	turn        *turnSub // the running turn or compaction, if any
	// unloaded is closed by thread/closed while a Release waits for the
	// app-server to unload the thread; nil when none waits.
	unloaded chan struct{}
}

func (ts *threadState) markLoaded(epoch int64) {
	ts.mu.Lock()
	ts.loadedEpoch = epoch
	ts.mu.Unlock()
}

func (ts *threadState) markNotLoaded() { ts.markLoaded(0) }

func (ts *threadState) loadedIn(epoch int64) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.loadedEpoch == epoch
}

func (ts *threadState) lastUsage() (Usage, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.usage, ts.hasUsage
}

// deliver is called from the stdout reader: it must not block on anything
// but short critical sections. It reports whether a turn of ours took n:
// false for a turn codex runs on its own (a goal's continuation).
func (ts *threadState) deliver(n notification) bool {
	ts.mu.Lock()
	if n.method == "thread/tokenUsage/updated" && n.event.TokenUsage != nil {
		ts.usage, ts.hasUsage = n.event.TokenUsage.toUsage(), true
	}
	if n.method == "thread/closed" {
		ts.loadedEpoch = 0
		if ts.unloaded != nil {
			close(ts.unloaded)
			ts.unloaded = nil
		}
	}
	sub := ts.turn
	ts.mu.Unlock()
	if sub == nil {
		return false
	}
	sub.push(n)
	return true
}

func (c *Client) lookup(threadID string) *threadState {
	c.tmu.RLock()
	defer c.tmu.RUnlock()
	return c.threads[threadID]
}

// threadFor returns the state for threadID, creating it.
func (c *Client) threadFor(threadID string) *threadState {
	if ts := c.lookup(threadID); ts != nil {
		return ts
	}
	c.tmu.Lock()
	defer c.tmu.Unlock()
	ts, ok := c.threads[threadID]
	if !ok {
		ts = &threadState{id: threadID}
		c.threads[threadID] = ts
	}
	return ts
}

// lockThread returns the tracked state for threadID with ensureMu held. It
// retries if a concurrent Release or loss forgot the state while we waited.
func (c *Client) lockThread(threadID string) *threadState {
	for {
		ts := c.threadFor(threadID)
		ts.ensureMu.Lock()
		if c.lookup(threadID) == ts {
			return ts
		}
		ts.ensureMu.Unlock()
	}
}

func (c *Client) forget(ts *threadState) {
	c.tmu.Lock()
	if c.threads[ts.id] == ts {
		delete(c.threads, ts.id)
	}
	c.tmu.Unlock()
}

// route hands a notification to the thread it names. It decodes the
// params once, here, so the turn's goroutine does not parse them again.
// Notifications without a threadId, or for threads this client does not
// track, are logged at debug level and ignored.
func (c *Client) route(cn *conn, method string, params json.RawMessage) {
	// Before the turn decode: their params (error is a string) are not a turnEvent's.
	if c.routeRateLimits(method, params) {
		return
	}
	if c.routeAccount(method, params) {
		return
	}
	if c.routeGoal(method, params) {
		return
	}
	if c.routeThreadName(method, params) {
		return
	}
	if !turnNotifications[method] {
		// Most of a turn's notifications (status, read state, warnings,
		// reasoning deltas) change nothing here: not decoding them is a
		// good part of the client's CPU per turn.
		cn.log.Debug("codex.notification", zap.String("method", method))
		return
	}
	e, err := decodeTurnEvent(method, params)
	if err != nil {
		cn.log.Debug("codex.notification", zap.String("method", method))
		return
	}
	c.routeEvent(cn, method, e)
}

// routeEvent hands a decoded turn notification to the thread it names.
func (c *Client) routeEvent(cn *conn, method string, e *turnEvent) {
	switch {
	case method == "serverRequest/resolved" && len(e.RequestID) > 0:
		cn.resolveRequest(e.RequestID)
	case method == "turn/completed" && e.Turn != nil:
		cn.endTurnRequests(e.ThreadID, e.Turn.ID)
		c.changes.forget(e.ThreadID)
	case method == "item/started" || method == "item/completed":
		c.changes.note(e.ThreadID, method == "item/started", e.Item)
	}
	if e.ThreadID == "" {
		cn.log.Debug("codex.notification", zap.String("method", method))
		return
	}
	if ts := c.lookup(e.ThreadID); ts != nil {
		if !ts.deliver(notification{method: method, event: e}) && method == "turn/completed" {
			c.autoTurnEnded(e)
		}
	}
}

// turnNotifications are the methods route hands on: what threadState.deliver,
// collector.handle and progressOf read, and serverRequest/resolved, which
// route handles itself. Keep it in step with them.
var turnNotifications = map[string]bool{
	"turn/started":              true,
	"turn/completed":            true,
	"turn/plan/updated":         true,
	"item/started":              true,
	"item/completed":            true,
	"item/agentMessage/delta":   true,
	"thread/tokenUsage/updated": true,
	"thread/closed":             true,
	"error":                     true,
	"serverRequest/resolved":    true,
	"model/rerouted":            true,
	"guardianWarning":           true,
}

// unreadNotifications are notifications the app-server sends on every turn
// (docs/codex-app-server.md §3) that nothing here reads: the reader drops them by their method
// before decoding the line. Only notification methods belong here, never
// a server request's, which must be answered.
var unreadNotifications = map[string]bool{
	"thread/status/changed":        true,
	"thread/readState/changed":     true,
	"warning":                      true,
	"remoteControl/status/changed": true,
}

// optedOutNotifications lists unreadNotifications, sorted, for initialize's
// capabilities.optOutNotificationMethods (docs/codex-app-server.md §1).
func optedOutNotifications() []string {
	return slices.Sorted(maps.Keys(unreadNotifications))
}

// agentDelta is item/agentMessage/delta's params: the most frequent
// notification of a turn, decoded without the other turnEvent fields.
type agentDelta struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Delta    string `json:"delta"`
}

// decodeTurnLine decodes the params of a whole notification line in one
// pass, which is what decodeTurnEvent does after the envelope's decode.
func decodeTurnLine(method string, line []byte) (*turnEvent, error) {
	if method == "item/agentMessage/delta" {
		if e, ok := decodeDeltaLine(line); ok {
			return e, nil
		}
		var l struct {
			Params *agentDelta `json:"params"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, err
		}
		if l.Params == nil {
			return nil, errNoParams
		}
		return &turnEvent{ThreadID: l.Params.ThreadID, TurnID: l.Params.TurnID, Delta: l.Params.Delta}, nil
	}
	var l struct {
		Params *turnEvent `json:"params"`
	}
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, err
	}
	if l.Params == nil {
		return nil, errNoParams
	}
	return l.Params, nil
}

var errNoParams = errors.New("codex: notification without params")

func decodeTurnEvent(method string, params json.RawMessage) (*turnEvent, error) {
	if method == "item/agentMessage/delta" {
		var d agentDelta
		if err := json.Unmarshal(params, &d); err != nil {
			return nil, err
		}
		return &turnEvent{ThreadID: d.ThreadID, TurnID: d.TurnID, Delta: d.Delta}, nil
	}
	e := new(turnEvent)
	if err := json.Unmarshal(params, e); err != nil {
		return nil, err
	}
	return e, nil
}

// EnsureThread makes a thread usable for turns in the current process.
//   - storedID == "": thread/start → OutcomeStarted.
//   - storedID loaded in the current process: OutcomeLoaded, no RPC.
//   - otherwise thread/resume (excludeTurns) within ResumeTimeout, which is
//     generous on purpose (long threads take seconds) and cancellable by ctx;
//     it waits through a process restart. If the server refuses the id as
//     lost ("no rollout found", "invalid session id", "is archived") a new
//     thread is started → OutcomeReplaced with PreviousID and Reason.
//     "already has an active writer" returns ErrStaleWriter: the thread is
//     not lost, its other writer must let go first, so it is not replaced.
func (c *Client) EnsureThread(ctx context.Context, storedID string, cfg ThreadConfig) (Ensured, error) {
	if storedID == "" {
		id, err := c.startThread(ctx, cfg)
		if err != nil {
			return Ensured{}, err
		}
		return Ensured{ThreadID: id, Outcome: OutcomeStarted}, nil
	}
	ts := c.lockThread(storedID)
	defer ts.ensureMu.Unlock()

	cn, err := c.current()
	if err != nil {
		return Ensured{}, err
	}
	if cn.alive() && ts.loadedIn(cn.epoch) {
		return Ensured{ThreadID: storedID, Outcome: OutcomeLoaded}, nil
	}
	err = c.resume(ctx, ts, cfg)
	switch {
	case err == nil:
		return Ensured{ThreadID: storedID, Outcome: OutcomeResumed}, nil
	case errors.Is(err, ErrThreadLost):
		c.forget(ts)
		reason := err.Error()
		var rpcErr *RPCError
		if errors.As(err, &rpcErr) {
			reason = rpcErr.Message
		}
		c.log.Warn("codex.thread_lost", zap.String("thread_id", storedID), zap.String("reason", reason))
		id, serr := c.startThread(ctx, cfg)
		if serr != nil {
			return Ensured{}, fmt.Errorf("codex: replace lost thread %s: %w", storedID, serr)
		}
		return Ensured{ThreadID: id, Outcome: OutcomeReplaced, PreviousID: storedID, Reason: reason}, nil
	default:
		return Ensured{}, err
	}
}

func (c *Client) resume(ctx context.Context, ts *threadState, cfg ThreadConfig) error {
	rctx, cancel := context.WithTimeout(ctx, c.opts.ResumeTimeout)
	defer cancel()
	params := cfg.params(map[string]any{"threadId": ts.id, "excludeTurns": true})
	var out struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	cn, err := c.callLive(rctx, "thread/resume", params, &out)
	// Released just now, the thread may still be closing (thread/closed
	// comes before the close ends): codex asks to retry, and nothing tells
	// when, so a short backoff within the resume's deadline.
	for bo := backoff.New(10*time.Millisecond, 200*time.Millisecond); errors.Is(err, errThreadClosing); {
		if !backoff.Sleep(rctx, bo.Next()) {
			return timeoutError("thread/resume of a closing thread", rctx.Err())
		}
		cn, err = c.callLive(rctx, "thread/resume", params, &out)
	}
	if err != nil {
		return err
	}
	if out.Thread.ID != "" && out.Thread.ID != ts.id {
		return fmt.Errorf("codex: thread/resume %s answered thread %s", ts.id, out.Thread.ID)
	}
	ts.markLoaded(cn.epoch)
	return nil
}

func (c *Client) startThread(ctx context.Context, cfg ThreadConfig) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var out struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	cn, err := c.callLive(sctx, "thread/start", cfg.startParams(), &out)
	if err != nil {
		return "", err
	}
	if out.Thread.ID == "" {
		return "", errors.New("codex: thread/start returned no thread id")
	}
	c.threadFor(out.Thread.ID).markLoaded(cn.epoch)
	return out.Thread.ID, nil
}

// callLive calls method on a live connection, waiting through a restart.
// If the process dies while the call is pending (typically another lane's
// doing), it is retried once on the successor: thread/start and
// thread/resume are safe to repeat.
func (c *Client) callLive(ctx context.Context, method string, params, out any) (*conn, error) {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var cn *conn
		if cn, err = c.liveConn(ctx); err != nil {
			return nil, err
		}
		if err = cn.call(ctx, method, params, out); err == nil {
			return cn, nil
		}
		if !errors.Is(err, ErrProcessDied) || c.ctx.Err() != nil {
			break
		}
		c.log.Warn("codex.retry_after_restart", zap.String("method", method), zap.Error(err))
	}
	return nil, c.closedOr(err)
}

// Release evicts a thread from the process (thread/unsubscribe) and forgets
// its loaded state; the thread stays on disk and the next EnsureThread
// resumes it. It refuses while a turn runs on the thread (ErrTurnActive).
//
// It returns once the app-server has unloaded the thread (thread/closed),
// not at the unsubscribe's answer: a thread codex kept loaded would be
// rejoined from memory by the next thread/resume instead of read from the
// rollout on disk, which a cluster node may just have replaced with the
// copy another node shipped. UnloadArgs makes codex unload at the last
// unsubscribe.
func (c *Client) Release(ctx context.Context, threadID string) error {
	ts := c.lookup(threadID)
	if ts == nil {
		return nil
	}
	ts.ensureMu.Lock()
	defer ts.ensureMu.Unlock()
	ts.mu.Lock()
	if ts.turn != nil {
		ts.mu.Unlock()
		return fmt.Errorf("codex: release %s: %w", threadID, ErrTurnActive)
	}
	epoch := ts.loadedEpoch
	ts.loadedEpoch = 0 // no turn starts on it from here
	unloaded := make(chan struct{})
	ts.unloaded = unloaded // before the call: thread/closed may beat its answer
	ts.mu.Unlock()
	// Forgotten only once the thread is unloaded, still under ensureMu: a
	// concurrent EnsureThread waits for it instead of resuming the thread
	// on a fresh state just before the unsubscribe lands.
	defer c.forget(ts)

	cn, err := c.current()
	if err != nil {
		return err
	}
	if !cn.alive() || epoch != cn.epoch {
		return nil // not loaded in this process: nothing to unsubscribe
	}
	uctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	var out struct {
		Status string `json:"status"`
	}
	if err := cn.call(uctx, "thread/unsubscribe", map[string]any{"threadId": threadID}, &out); err != nil {
		return c.closedOr(err)
	}
	if out.Status != "unsubscribed" {
		return nil // "notLoaded": nothing to wait for
	}
	select {
	case <-unloaded:
		return nil
	case <-cn.dead:
		return nil // the process is gone, and the thread with it
	case <-uctx.Done():
		return timeoutError("release "+threadID+": no thread/closed after thread/unsubscribe", uctx.Err())
	}
}

// UnloadArgs are the app-server overrides Release relies on: a thread is
// unloaded as soon as its last subscriber leaves. codex's default keeps an
// unsubscribed thread loaded (measured: still listed by thread/loaded/list
// 20 s later), and thread/resume then rejoins it from memory. They go after
// the configured args, so they win.
var UnloadArgs = []string{"-c", "thread_unload_delay_secs=0"}

// Usage returns the last token usage the app-server reported for the thread.
func (c *Client) Usage(threadID string) (Usage, bool) {
	ts := c.lookup(threadID)
	if ts == nil {
		return Usage{}, false
	}
	return ts.lastUsage()
}

// closedOr turns a process-died error into ErrClosed once the client closed.
func (c *Client) closedOr(err error) error {
	if err != nil && c.ctx.Err() != nil && errors.Is(err, ErrProcessDied) {
		return fmt.Errorf("%w (%v)", ErrClosed, err)
	}
	return err
}
