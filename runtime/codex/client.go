// Package codex is a client for one long-lived, supervised `codex
// app-server` process (JSON-RPC over stdio) shared by many lanes.
//
// The client spawns the native binary in its own process group with a
// parent-death signal, performs the initialize handshake, correlates
// concurrent requests, routes notifications to the owning thread without
// ever blocking its stdout reader, answers every server→client request, and
// restarts the process with backoff when it dies or stops answering. Each
// restart starts a new epoch: threads loaded before must be resumed
// (EnsureThread does that) before their next turn.
package codex

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/internal/backoff"
)

// drainGrace bounds how long a dead process's stdout is still read.
const drainGrace = 2 * time.Second

// Client owns one app-server process at a time and the threads loaded in it.
type Client struct {
	opts   Options
	binary string
	log    *zap.Logger

	// ctx is cancelled by Close; it stops supervision and restarts.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	conn     *conn // the current incarnation (possibly dead while restarting)
	started  bool  // Start was called; Handle may no longer change opts
	closed   bool
	restarts atomic.Int64

	supervisorDone chan struct{}
	healthDone     chan struct{}

	tmu     sync.RWMutex
	threads map[string]*threadState

	limits rateLimitBook // the account's last rate-limit snapshot

	// changes are the files of the fileChange items in progress, for the
	// approval request about one (which names no path of its own).
	changes changeBook

	// watch are the goal and auto-turn watchers (goal.go).
	watch watchers
	// names are the thread name watchers (names.go).
	names nameWatchers

	// userAgent is initialize's userAgent from the latest handshake
	// ("<client>/<codex version> (<os>) ..."); a restart may bring an
	// upgraded binary, so each handshake replaces it.
	userAgent atomic.Pointer[string]
}

// tapConn, when set (only by the tests that record testdata/codex), wraps
// each process's stdout and stdin so the traffic can be written down.
var tapConn func(stdout io.Reader, stdin io.Writer) (io.Reader, io.Writer)

// Start builds a client (New) and starts it: the app-server is spawned,
// handshaken within StartTimeout and supervised afterwards. Callers whose
// handlers need the client first use New, Handle and Client.Start.
func Start(ctx context.Context, opts Options) (*Client, error) {
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// New resolves the command and builds a client that runs no process yet:
// a caller can hand it to what the handlers call into (the gateway), bind
// the handlers with Handle and only then Start it, so no server request
// arrives before its handler exists.
func New(opts Options) (*Client, error) {
	opts = opts.withDefaults()
	binary, err := ResolveCommand(opts.Command)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.Background())
	return &Client{
		opts:           opts,
		binary:         binary,
		log:            opts.Logger,
		ctx:            cctx,
		cancel:         cancel,
		supervisorDone: make(chan struct{}),
		healthDone:     make(chan struct{}),
		threads:        make(map[string]*threadState),
	}, nil
}

// Handlers are the hooks the app-server's requests and notifications run,
// as in Options; a nil field keeps the Options' one.
type Handlers struct {
	Approvals   ApprovalHandler
	Unsupported UnsupportedHandler
	ToolCall    ToolCallHandler
	UserInput   UserInputHandler
	OnAccount   AccountUpdatedHandler
	OnLogin     LoginCompletedHandler
}

// ErrStarted is Handle's answer once the client started: the handlers are
// read without a lock while the process runs, so they are bound before.
var ErrStarted = errors.New("codex: handlers must be bound before Start")

// Handle binds the handlers. It must be called before Start: a request
// served before its handler was bound would be answered wrongly, so a late
// call changes nothing and reports ErrStarted.
func (c *Client) Handle(h Handlers) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return ErrStarted
	}
	if h.Approvals != nil {
		c.opts.Approvals = h.Approvals
	}
	if h.Unsupported != nil {
		c.opts.Unsupported = h.Unsupported
	}
	if h.ToolCall != nil {
		c.opts.ToolCall = h.ToolCall
	}
	if h.UserInput != nil {
		c.opts.UserInput = h.UserInput
	}
	if h.OnAccount != nil {
		c.opts.OnAccount = h.OnAccount
	}
	if h.OnLogin != nil {
		c.opts.OnLogin = h.OnLogin
	}
	return nil
}

// Start spawns the app-server, performs the initialize handshake within
// StartTimeout and supervises the process afterwards. A client starts
// once; a failed start leaves it closed.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started || c.closed {
		c.mu.Unlock()
		return errors.New("codex: client already started or closed")
	}
	c.started = true
	c.mu.Unlock()
	cn, err := c.connect(ctx, 1)
	if err != nil {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.cancel()
		return err
	}
	c.mu.Lock()
	c.conn = cn
	c.mu.Unlock()
	go c.supervise()
	go c.healthLoop()
	c.log.Info("codex.started", zap.String("binary", c.binary), zap.Int("pid", cn.proc.pid))
	return nil
}

// connect spawns a process and performs the handshake; on failure the
// process is killed and reaped.
func (c *Client) connect(ctx context.Context, epoch int64) (*conn, error) {
	proc, err := spawn(c.opts, c.binary, c.log)
	if err != nil {
		return nil, err
	}
	var stdout io.Reader = pipeReader(proc.stdout)
	var stdin io.Writer = proc.stdin
	if tapConn != nil {
		stdout, stdin = tapConn(stdout, stdin)
	}
	cn := newConn(stdout, stdin, c.log.With(zap.Int64("epoch", epoch), zap.Int("pid", proc.pid)))
	cn.proc, cn.epoch = proc, epoch
	cn.onNotify, cn.onEvent, cn.onRequest = c.route, c.routeEvent, c.serveRequest
	go cn.readLoop()
	go func() {
		<-proc.exited
		// The reader marks the connection dead at EOF, after handling what
		// the process wrote last. A pipe kept open by an escaped grandchild
		// never reaches EOF: stop waiting after drainGrace.
		t := time.NewTimer(drainGrace)
		select {
		case <-cn.readDone:
		case <-t.C:
		}
		t.Stop()
		cn.fail(fmt.Errorf("%w: exited: %v", ErrProcessDied, proc.err))
		closeAll(proc.stdout, proc.stdin)
	}()

	hctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if err := c.handshake(hctx, cn); err != nil {
		proc.kill()
		<-proc.exited
		return nil, fmt.Errorf("codex: handshake: %w", err)
	}
	return cn, nil
}

func (c *Client) handshake(ctx context.Context, cn *conn) error {
	params := map[string]any{
		"clientInfo": map[string]any{
			"name": c.opts.ClientName, "title": nil, "version": c.opts.ClientVersion,
		},
		"capabilities": map[string]any{
			"experimentalApi": true,
			// Every line the app-server writes wakes gatewayd (netpoll, a
			// read, the runtime's sysmon): a notification nothing reads is
			// cheapest when codex never sends it. The reader still drops
			// them by method, for an app-server that ignores the opt-out.
			"optOutNotificationMethods": optedOutNotifications(),
		},
	}
	var out struct {
		UserAgent string `json:"userAgent"`
	}
	if err := cn.call(ctx, "initialize", params, &out); err != nil {
		return err
	}
	c.userAgent.Store(&out.UserAgent)
	return cn.notify("initialized", nil)
}

// UserAgent is the app-server's userAgent from its initialize answer; ""
// before the first handshake.
func (c *Client) UserAgent() string {
	if ua := c.userAgent.Load(); ua != nil {
		return *ua
	}
	return ""
}

// ServerVersion is the codex version the app-server reports: the userAgent
// part after the client name ("gatewayd/0.169.0 (Debian 12; x86_64) ..."
// gives "0.169.0"); "" when the userAgent has no such part.
func (c *Client) ServerVersion() string {
	_, rest, ok := strings.Cut(c.UserAgent(), "/")
	if !ok {
		return ""
	}
	version, _, _ := strings.Cut(rest, " ")
	return version
}

// current returns the current incarnation, or ErrClosed.
func (c *Client) current() (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	return c.conn, nil
}

// liveConn returns a live connection, waiting through a restart for up to
// ctx.
func (c *Client) liveConn(ctx context.Context) (*conn, error) {
	for {
		cn, err := c.current()
		if err != nil {
			return nil, err
		}
		if cn.alive() {
			return cn, nil
		}
		select {
		case <-cn.replaced:
		case <-c.ctx.Done():
			return nil, ErrClosed
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, timeoutError("waiting for app-server restart", ctx.Err())
			}
			return nil, fmt.Errorf("codex: waiting for app-server restart: %w", ctx.Err())
		}
	}
}

// supervise restarts the process whenever the current connection dies.
func (c *Client) supervise() {
	defer close(c.supervisorDone)
	delays := backoff.New(c.opts.RestartBackoff, c.opts.RestartBackoffMax)
	for {
		c.mu.Lock()
		cn := c.conn
		c.mu.Unlock()
		born := time.Now()
		select {
		case <-cn.dead:
		case <-c.ctx.Done():
			return
		}
		if c.ctx.Err() != nil {
			return
		}
		c.log.Warn("codex.process_died", zap.Int64("epoch", cn.epoch), zap.Error(cn.err()))
		cn.proc.kill() // a hung process is alive; its stdout may be too
		if time.Since(born) > c.opts.RestartBackoffMax {
			delays.Reset() // it ran fine for a while: not a crash loop
		}
		next, ok := c.restart(cn.epoch+1, delays)
		if !ok {
			return
		}
		c.install(cn, next)
	}
}

// restart spawns a successor, backing off exponentially between failures.
// It returns false when the client closed meanwhile.
func (c *Client) restart(epoch int64, delays *backoff.Backoff) (*conn, bool) {
	for {
		wait := delays.Next()
		if !backoff.Sleep(c.ctx, wait) {
			return nil, false
		}
		next, err := c.connect(c.ctx, epoch)
		if err == nil {
			return next, true
		}
		if c.ctx.Err() != nil {
			return nil, false
		}
		c.log.Error("codex.restart_failed", zap.Duration("backoff", wait), zap.Error(err))
	}
}

// install makes next the current connection; a waiting liveConn wakes on
// old.replaced.
func (c *Client) install(old, next *conn) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		next.proc.kill()
		<-next.proc.exited
		return
	}
	c.conn = next
	c.mu.Unlock()
	c.restarts.Add(1)
	close(old.replaced)
	c.log.Info("codex.restarted", zap.Int64("epoch", next.epoch), zap.Int("pid", next.proc.pid),
		zap.Int64("restarts", c.restarts.Load()))
}

// healthLoop pings the app-server; a process that does not answer within
// HealthTimeout is killed, which makes supervise restart it.
func (c *Client) healthLoop() {
	defer close(c.healthDone)
	t := time.NewTicker(c.opts.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		cn, err := c.current()
		if err != nil || !cn.alive() {
			continue
		}
		if !c.answers(cn) {
			c.log.Error("codex.unresponsive", zap.Int64("epoch", cn.epoch), zap.Duration("timeout", c.opts.HealthTimeout))
			cn.fail(fmt.Errorf("%w: no answer to ping within %s", ErrProcessDied, c.opts.HealthTimeout))
			cn.proc.kill()
		}
	}
}

// answers reports whether cn answers a ping within HealthTimeout. The ping
// runs on its own goroutine because a process that stopped reading stdin
// blocks the write itself, which no context can interrupt.
func (c *Client) answers(cn *conn) bool {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.HealthTimeout)
	defer cancel()
	result := make(chan error, 1)
	go func() { result <- ping(ctx, cn) }()
	select {
	case err := <-result:
		return !errors.Is(err, ErrTimeout)
	case <-ctx.Done():
		return c.ctx.Err() != nil // closing is not a hang
	}
}

// Ping sends a cheap request and waits for any answer (an RPC error counts
// as alive).
func (c *Client) Ping(ctx context.Context) error {
	cn, err := c.current()
	if err != nil {
		return err
	}
	return ping(ctx, cn)
}

func ping(ctx context.Context, cn *conn) error {
	err := cn.call(ctx, "thread/loaded/list", map[string]any{"limit": 1}, nil)
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) {
		return nil
	}
	return err
}

// Restarts reports how many times the process was restarted.
func (c *Client) Restarts() int64 { return c.restarts.Load() }

// Close stops supervision, fails pending calls and turns with ErrClosed,
// closes the app-server's stdin, waits for it to exit until ctx is done,
// then kills its process group and reaps it.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	running := c.conn != nil
	c.mu.Unlock()
	c.cancel()
	if !running { // never started, or its start failed: no process to stop
		return nil
	}
	<-c.supervisorDone
	<-c.healthDone

	c.mu.Lock()
	cn := c.conn
	c.mu.Unlock()
	cn.fail(ErrClosed)
	_ = cn.proc.stdin.Close() // EOF asks the app-server to exit
	graceful := true
	select {
	case <-cn.proc.exited:
	case <-ctx.Done():
		graceful = false
	}
	cn.proc.kill() // also any stragglers in the group
	<-cn.proc.exited
	close(cn.replaced)
	c.log.Info("codex.closed", zap.Bool("graceful", graceful))
	return nil
}

// serveRequest answers a server→client request; every request the server
// still waits for gets an answer, or the turn waiting on it would stall
// forever.
//
// ctx is the request's own: it ends when the server resolves the request
// without us (serverRequest/resolved, e.g. after turn/interrupt), when the
// request's turn completes, or when the process dies. A decision made after
// that is not sent: nobody waits for it (codex ignores late answers).
func (c *Client) serveRequest(ctx context.Context, cn *conn, id json.RawMessage, method string, params json.RawMessage) {
	if method == toolCallMethod && c.opts.ToolCall != nil {
		c.serveToolCall(ctx, cn, id, params)
		return
	}
	if method == userInputMethod && c.opts.UserInput != nil {
		c.serveUserInput(ctx, cn, id, params)
		return
	}
	kind, isApproval := approvalKinds[method]
	if !isApproval {
		c.refuseRequest(cn, id, method, params)
		return
	}
	req := parseApproval(kind, params)
	if kind == "fileChange" {
		req.Files = c.changes.of(req.ThreadID, req.ItemID)
	}
	decision := c.opts.Approvals(ctx, req)
	if ctx.Err() != nil {
		c.log.Info("codex.approval_resolved_elsewhere", zap.String("kind", kind), zap.String("thread_id", req.ThreadID),
			zap.String("item_id", req.ItemID), zap.String("decision", string(decision)))
		return
	}
	if !decision.valid() {
		c.log.Error("codex.invalid_decision", zap.String("decision", string(decision)))
		decision = DecisionDecline
	}
	c.log.Info("codex.approval", zap.String("kind", kind), zap.String("thread_id", req.ThreadID),
		zap.String("item_id", req.ItemID), zap.String("decision", string(decision)))
	if err := cn.reply(id, map[string]any{"decision": decision}); err != nil {
		c.log.Warn("codex.reply_failed", zap.String("method", method), zap.Error(err))
	}
}

// refuseRequest answers a request gatewayd cannot serve with a JSON-RPC
// error (the result shapes of permissions, user input, elicitation and
// dynamic tools are not ours to invent; docs/codex-app-server.md §4), then tells the
// Unsupported hook which thread asked, so its lane is not left wondering.
func (c *Client) refuseRequest(cn *conn, id json.RawMessage, method string, params json.RawMessage) {
	var p struct {
		ThreadID string `json:"threadId"`
	}
	_ = json.Unmarshal(params, &p) // best effort: no thread id → nobody to tell
	c.log.Warn("codex.unsupported_server_request", zap.String("method", method), zap.String("thread_id", p.ThreadID))
	if err := cn.replyError(id, -32601, "gatewayd does not support "+method); err != nil {
		c.log.Debug("codex.reply_failed", zap.String("method", method), zap.Error(err))
	}
	if p.ThreadID != "" && c.opts.Unsupported != nil {
		c.opts.Unsupported(p.ThreadID, method)
	}
}

var approvalKinds = map[string]string{
	"item/commandExecution/requestApproval": "command",
	"item/fileChange/requestApproval":       "fileChange",
}

func parseApproval(kind string, params json.RawMessage) ApprovalRequest {
	var p struct {
		ThreadID  string `json:"threadId"`
		TurnID    string `json:"turnId"`
		ItemID    string `json:"itemId"`
		Command   string `json:"command"`
		Cwd       string `json:"cwd"`
		Reason    string `json:"reason"`
		GrantRoot string `json:"grantRoot"`
		Network   *struct {
			Host string `json:"host"`
		} `json:"networkApprovalContext"`
		Extra json.RawMessage `json:"additionalPermissions"`
	}
	_ = json.Unmarshal(params, &p) // best effort: the handler still gets Raw
	req := ApprovalRequest{
		Kind: kind, ThreadID: p.ThreadID, TurnID: p.TurnID, ItemID: p.ItemID,
		Command: p.Command, Cwd: p.Cwd, Reason: p.Reason, GrantRoot: p.GrantRoot,
		ExtraPermissions: extraPermissions(p.Extra), Raw: params,
	}
	if p.Network != nil {
		// An empty host still asks for the network: never let it read as none.
		req.Network = cmp.Or(p.Network.Host, "(unnamed host)")
	}
	return req
}

// extraPermissions reports whether additionalPermissions asks for
// anything: null, {} and a profile of nulls ask for nothing.
func extraPermissions(raw json.RawMessage) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return true // not a profile we can read: assume it widens
	}
	for _, v := range m {
		if s := string(bytes.TrimSpace(v)); s != "null" && s != "{}" {
			return true
		}
	}
	return false
}
