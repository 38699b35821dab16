package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// conn speaks newline-delimited JSON-RPC with one app-server process. It
// is replaced as a whole when the process restarts; its epoch tells which
// incarnation loaded a thread.
type conn struct {
	epoch int64
	proc  *process // nil when driven over in-memory pipes (benchmarks)
	log   *zap.Logger

	wmu sync.Mutex
	w   io.Writer
	r   *bufio.Reader

	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[int64]chan response

	dead     chan struct{} // closed once the connection is unusable
	deadErr  error         // why; set before dead is closed
	deadOnce sync.Once
	replaced chan struct{} // closed when a successor is installed or the client closed

	// ctx is cancelled when the connection dies; every server request's
	// context derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	// readDone is closed when readLoop has returned: everything the process
	// wrote has been handled.
	readDone chan struct{}

	smu   sync.Mutex
	sreqs map[string]*serverReq // server→client requests being handled, by raw id

	onNotify func(cn *conn, method string, params json.RawMessage)
	// onEvent, when set, takes the notifications a turn reads decoded
	// straight from their line (one decode, not the envelope's then the
	// params'); onNotify gets them when the fast decode fails.
	onEvent   func(cn *conn, method string, e *turnEvent)
	onRequest func(ctx context.Context, cn *conn, id json.RawMessage, method string, params json.RawMessage)
}

// serverReq is a server→client request whose handler is running. Its
// context ends when the server resolves it some other way
// (serverRequest/resolved), when its turn completes, or when the
// connection dies.
type serverReq struct {
	threadID, turnID string
	cancel           context.CancelFunc
}

type response struct {
	result json.RawMessage
	err    *wireError
}

type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// envelope is any line the server sends: a response (id + result/error), a
// notification (method) or a server→client request (id + method).
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *wireError      `json:"error"`
}

func newConn(r io.Reader, w io.Writer, log *zap.Logger) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		log:      log,
		w:        w,
		r:        bufio.NewReaderSize(r, 64<<10),
		pending:  make(map[int64]chan response),
		dead:     make(chan struct{}),
		replaced: make(chan struct{}),
		ctx:      ctx,
		cancel:   cancel,
		readDone: make(chan struct{}),
		sreqs:    make(map[string]*serverReq),
	}
	// Safe defaults; the client installs its router and request handler.
	c.onNotify = func(*conn, string, json.RawMessage) {}
	c.onRequest = func(_ context.Context, cn *conn, id json.RawMessage, method string, _ json.RawMessage) {
		_ = cn.replyError(id, -32601, "gatewayd does not support "+method)
	}
	return c
}

// alive reports whether the connection can still carry calls.
func (c *conn) alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

// fail marks the connection dead with cause; pending calls observe dead.
func (c *conn) fail(cause error) {
	c.deadOnce.Do(func() {
		c.mu.Lock()
		c.deadErr = cause
		c.pending = map[int64]chan response{}
		c.mu.Unlock()
		close(c.dead)
		c.cancel()
	})
}

// err returns why the connection died (nil while alive).
func (c *conn) err() error {
	if c.alive() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadErr
}

// readLoop reads lines until EOF. bufio.Reader.ReadBytes has no line length
// limit: a thread/resume result can be megabytes on one line. The loop
// never blocks on a consumer: responses go to buffered channels,
// notifications to unbounded per-thread queues, server requests to their
// own goroutines.
//
// The reader, not the process's exit, marks the connection dead at EOF: a
// line written just before the process exited is still handled first.
func (c *conn) readLoop() {
	defer close(c.readDone)
	for {
		line, err := c.r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			c.handleLine(line)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				c.fail(c.eofCause())
			} else {
				c.fail(fmt.Errorf("%w: read stdout: %v", ErrProcessDied, err))
			}
			return
		}
	}
}

// eofCause says why stdout ended: the process's exit status if it has
// already been reaped.
func (c *conn) eofCause() error {
	if c.proc != nil {
		select {
		case <-c.proc.exited:
			return fmt.Errorf("%w: exited: %v", ErrProcessDied, c.proc.err)
		default:
		}
	}
	return fmt.Errorf("%w: stdout closed", ErrProcessDied)
}

func (c *conn) handleLine(line []byte) {
	method, ok := notificationMethod(line)
	switch {
	case ok && unreadNotifications[string(method)]:
		// Nothing reads it: not decoding it is the cheapest way to drop it.
		if ce := c.log.Check(zap.DebugLevel, "codex.notification"); ce != nil {
			ce.Write(zap.ByteString("method", method))
		}
		return
	case ok && c.onEvent != nil && turnNotifications[string(method)]:
		if e, err := decodeTurnLine(string(method), line); err == nil {
			c.onEvent(c, string(method), e)
			return
		}
		// Decoded in full below, which logs what is wrong with it.
	}
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		c.log.Warn("codex.malformed_line", zap.Int("bytes", len(line)),
			zap.ByteString("head", head(line, 200)), zap.Error(err))
		return
	}
	hasID := len(env.ID) > 0 && string(env.ID) != "null"
	switch {
	case hasID && env.Method != "":
		// Registered here, on the reader, so that a serverRequest/resolved
		// read right after it always finds it.
		ctx, done := c.trackRequest(env.ID, env.Params)
		go func() {
			defer done()
			c.onRequest(ctx, c, env.ID, env.Method, env.Params)
		}()
	case hasID:
		c.deliverResponse(env)
	case env.Method != "":
		c.onNotify(c, env.Method, env.Params)
	default:
		c.log.Warn("codex.malformed_line", zap.Int("bytes", len(line)),
			zap.ByteString("head", head(line, 200)), zap.String("why", "neither id nor method"))
	}
}

// notificationMethod returns the method of a line that opens with it, the
// way the app-server writes notifications: {"method":"…","params":…}. ok
// is false for any other shape (a response, a request that starts with its
// id, a method with escapes), which the caller decodes in full.
func notificationMethod(line []byte) ([]byte, bool) {
	const open = `{"method":"`
	if !bytes.HasPrefix(line, []byte(open)) {
		return nil, false
	}
	rest := line[len(open):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return nil, false
	}
	return rest[:end], true
}

// trackRequest registers a server request; its context ends on
// resolveRequest, endTurnRequests or the connection's death. done
// unregisters it.
func (c *conn) trackRequest(id, params json.RawMessage) (context.Context, func()) {
	var p struct {
		ThreadID string `json:"threadId"`
		TurnID   string `json:"turnId"`
	}
	_ = json.Unmarshal(params, &p) // best effort: without ids only resolution or death ends it
	ctx, cancel := context.WithCancel(c.ctx)
	r := &serverReq{threadID: p.ThreadID, turnID: p.TurnID, cancel: cancel}
	key := string(bytes.TrimSpace(id))
	c.smu.Lock()
	c.sreqs[key] = r
	c.smu.Unlock()
	return ctx, func() {
		c.smu.Lock()
		if c.sreqs[key] == r {
			delete(c.sreqs, key)
		}
		c.smu.Unlock()
		cancel()
	}
}

// resolveRequest ends the context of the server request id: the server
// no longer waits for its answer (serverRequest/resolved).
func (c *conn) resolveRequest(id json.RawMessage) {
	c.smu.Lock()
	r := c.sreqs[string(bytes.TrimSpace(id))]
	c.smu.Unlock()
	if r != nil {
		r.cancel()
	}
}

// endTurnRequests ends the contexts of the server requests of a turn that
// completed: the server dropped them with it.
func (c *conn) endTurnRequests(threadID, turnID string) {
	if turnID == "" {
		return
	}
	c.smu.Lock()
	defer c.smu.Unlock()
	for _, r := range c.sreqs {
		if r.threadID == threadID && r.turnID == turnID {
			r.cancel()
		}
	}
}

func (c *conn) deliverResponse(env envelope) {
	id, err := strconv.ParseInt(string(env.ID), 10, 64)
	if err != nil {
		c.log.Warn("codex.unknown_response_id", zap.ByteString("id", env.ID))
		return
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !ok {
		c.log.Debug("codex.late_response", zap.Int64("id", id))
		return
	}
	ch <- response{result: env.Result, err: env.Error} // buffered: never blocks
}

func head(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

type request struct {
	ID     int64  `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// call sends a request and waits for its response, the connection's death
// or ctx. out, if non-nil, receives the result.
func (c *conn) call(ctx context.Context, method string, params, out any) error {
	pc, err := c.start(method, params)
	if err != nil {
		return err
	}
	defer pc.forget()
	return pc.wait(ctx, out)
}

// pendingCall is a request that was sent and whose answer is awaited. A
// caller that stops waiting may hand it to another goroutine, which can
// still receive the answer; forget drops it.
type pendingCall struct {
	cn     *conn
	id     int64
	method string
	ch     chan response
}

// start sends a request without waiting for its answer.
func (c *conn) start(method string, params any) (*pendingCall, error) {
	pc := &pendingCall{cn: c, id: c.nextID.Add(1), method: method, ch: make(chan response, 1)}
	c.mu.Lock()
	if c.deadErr != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("codex: %s: %w", method, c.deadErr)
	}
	c.pending[pc.id] = pc.ch
	c.mu.Unlock()
	if err := c.send(request{ID: pc.id, Method: method, Params: params}); err != nil {
		pc.forget()
		return nil, fmt.Errorf("codex: %s: %w", method, err)
	}
	return pc, nil
}

// wait waits for the answer, the connection's death or ctx; the call stays
// pending when ctx ends, so wait may be called again.
func (pc *pendingCall) wait(ctx context.Context, out any) error {
	select {
	case r := <-pc.ch:
		return decodeResponse(pc.method, r, out)
	case <-pc.cn.dead:
		select {
		case r := <-pc.ch: // answered just before the end
			return decodeResponse(pc.method, r, out)
		default:
		}
		return fmt.Errorf("codex: %s: %w", pc.method, pc.cn.err())
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return timeoutError(pc.method, ctx.Err())
		}
		return fmt.Errorf("codex: %s: %w", pc.method, ctx.Err())
	}
}

func (pc *pendingCall) forget() { pc.cn.forget(pc.id) }

func (c *conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func decodeResponse(method string, r response, out any) error {
	if r.err != nil {
		return &RPCError{Method: method, Code: r.err.Code, Message: r.err.Message}
	}
	if out == nil || len(r.result) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.result, out); err != nil {
		return fmt.Errorf("codex: %s: decode result: %w", method, err)
	}
	return nil
}

// notify sends a notification (no id, no answer).
func (c *conn) notify(method string, params any) error {
	return c.send(struct {
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{method, params})
}

// reply answers a server→client request with a result.
func (c *conn) reply(id json.RawMessage, result any) error {
	return c.send(struct {
		ID     json.RawMessage `json:"id"`
		Result any             `json:"result"`
	}{id, result})
}

// replyError answers a server→client request with a JSON-RPC error.
func (c *conn) replyError(id json.RawMessage, code int, message string) error {
	return c.send(struct {
		ID    json.RawMessage `json:"id"`
		Error wireError       `json:"error"`
	}{id, wireError{Code: code, Message: message}})
}

// send writes one JSON line. One Write per message under the lock keeps
// concurrent messages from interleaving.
func (c *conn) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	b = append(b, '\n')
	c.wmu.Lock()
	_, err = c.w.Write(b)
	c.wmu.Unlock()
	if err != nil {
		cause := fmt.Errorf("%w: write stdin: %v", ErrProcessDied, err)
		c.fail(cause)
		return cause
	}
	return nil
}
