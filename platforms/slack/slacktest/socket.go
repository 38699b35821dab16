package slacktest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Ack is one acknowledgement the client wrote on the socket.
type Ack struct {
	EnvelopeID string
	Payload    json.RawMessage // the ack's payload (a slash command's answer), if any
	Known      bool            // it named an envelope the fake was waiting on
	Ignored    bool            // dropped by IgnoreAcks: the envelope stays unacked
}

// envelope is one Socket Mode message to the client.
type envelope struct {
	id, kind, eventID string
	payload           json.RawMessage
	attempt           int
	written, acked    bool
	timer             *time.Timer
}

type sockConn struct {
	ws      *websocket.Conn
	wmu     sync.Mutex
	done    chan struct{}
	once    sync.Once
	noPings atomic.Bool
}

type socketState struct {
	opens   int
	conns   []*sockConn
	seq     int
	pending map[string]*envelope // by envelope id: sent or queued, not acked
	queue   []*envelope          // waiting for a connection
	events  map[string]*envelope // events_api by event id (Redeliver)
	acks    []Ack
	ignore  int
	// dropAway discards events while no client is connected, as Slack
	// does once it gives up on an app: only backfill finds them.
	dropAway bool
	dropped  int
	refuse   bool // apps.connections.open answers 503
}

func (st *socketState) init() {
	st.pending = map[string]*envelope{}
	st.events = map[string]*envelope{}
}

var upgrader = websocket.Upgrader{
	// slack-go dials with Origin https://api.slack.com.
	CheckOrigin: func(*http.Request) bool { return true },
}

func (s *Server) handleConnectionsOpen(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls["apps.connections.open"]++
	if s.sock.refuse {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	switch token {
	case AppToken:
	case BotToken:
		writeJSON(w, fail("not_allowed_token_type"))
		return
	default:
		writeJSON(w, fail("invalid_auth"))
		return
	}
	s.sock.opens++
	s.notifyLocked()
	url := "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/ws?ticket=" + strconv.Itoa(s.sock.opens)
	writeJSON(w, reply{"ok": true, "url": url})
}

// handleSocket is one Socket Mode connection: hello, pings, envelopes
// out, acks in. A new connection replaces the older ones, as Slack's
// refresh does.
func (s *Server) handleSocket(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &sockConn{ws: ws, done: make(chan struct{})}
	hello := reply{"type": "hello", "num_connections": 1, "connection_info": reply{"app_id": AppID},
		"debug_info": reply{"host": "fake", "build_number": 1, "approximate_connection_time": 18060}}
	// hello goes first, under the write lock, and the socket is current
	// from now on, so nothing posted from here on is dropped as sent
	// while away.
	c.wmu.Lock()
	s.mu.Lock()
	old := s.sock.conns
	s.sock.conns = []*sockConn{c}
	queued := s.sock.queue
	s.sock.queue = nil
	s.notifyLocked()
	s.mu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	err = c.ws.WriteJSON(hello)
	c.wmu.Unlock()
	for _, o := range old {
		o.close()
	}
	if err != nil {
		c.close()
		return
	}
	go s.ping(c)
	for _, env := range queued {
		s.write(c, env)
	}
	s.readAcks(c)
}

func (c *sockConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

func (c *sockConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

func (s *Server) ping(c *sockConn) {
	t := time.NewTicker(s.opts.PingEvery)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			if c.noPings.Load() {
				continue
			}
			if c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)) != nil {
				return
			}
		}
	}
}

func (s *Server) readAcks(c *sockConn) {
	defer c.close()
	for {
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if err := c.ws.ReadJSON(&ack); err != nil {
			s.mu.Lock()
			s.dropConnLocked(c)
			s.mu.Unlock()
			return
		}
		s.recordAck(ack.EnvelopeID, ack.Payload)
	}
}

func (s *Server) recordAck(id string, payload json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	a := Ack{EnvelopeID: id, Payload: payload}
	env, known := s.sock.pending[id]
	a.Known = known
	if known && s.sock.ignore > 0 {
		s.sock.ignore--
		a.Ignored = true
		s.sock.acks = append(s.sock.acks, a)
		return
	}
	s.sock.acks = append(s.sock.acks, a)
	if known {
		env.acked = true
		if env.timer != nil {
			env.timer.Stop()
		}
		delete(s.sock.pending, id)
	}
}

func (s *Server) dropConnLocked(c *sockConn) {
	for i, o := range s.sock.conns {
		if o == c {
			s.sock.conns = append(s.sock.conns[:i:i], s.sock.conns[i+1:]...)
			s.notifyLocked()
			return
		}
	}
}

// send hands env to the current connection, or queues it until one opens
// (Slack holds events briefly while an app is away). An events_api
// envelope not acked within AckTimeout is redelivered.
func (s *Server) send(env *envelope) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if len(s.sock.conns) == 0 && s.sock.dropAway {
		s.sock.dropped++
		s.notifyLocked()
		s.mu.Unlock()
		return
	}
	s.sock.pending[env.id] = env
	if env.kind == "events_api" {
		s.sock.events[env.eventID] = env
		id := env.id
		env.timer = time.AfterFunc(s.opts.AckTimeout, func() { s.timeout(id) })
	}
	var c *sockConn
	if n := len(s.sock.conns); n > 0 {
		c = s.sock.conns[n-1]
	} else {
		s.sock.queue = append(s.sock.queue, env)
	}
	s.notifyLocked()
	s.mu.Unlock()
	if c != nil {
		s.write(c, env)
	}
}

func (s *Server) write(c *sockConn, env *envelope) {
	msg := reply{"envelope_id": env.id, "type": env.kind, "payload": env.payload,
		"accepts_response_payload": env.kind == "slash_commands"}
	if env.kind == "events_api" {
		msg["retry_attempt"] = env.attempt
		if env.attempt > 0 {
			msg["retry_reason"] = "timeout"
		}
	}
	if err := c.write(msg); err != nil {
		// The socket died under the write. If the client already opened
		// another one, the envelope goes there: queued, it would wait for
		// an open that already happened and never be sent.
		s.mu.Lock()
		s.dropConnLocked(c)
		var next *sockConn
		if n := len(s.sock.conns); n > 0 {
			next = s.sock.conns[n-1]
		} else {
			s.sock.queue = append(s.sock.queue, env)
		}
		s.mu.Unlock()
		if next != nil {
			s.write(next, env)
		}
		return
	}
	s.mu.Lock()
	env.written = true
	s.mu.Unlock()
}

// timeout redelivers an unacked events_api envelope with a new envelope
// id, the same event id and the next retry_attempt, as Slack does, at
// most MaxRetries times. Interactive and slash envelopes never come back.
func (s *Server) timeout(id string) {
	s.mu.Lock()
	env, ok := s.sock.pending[id]
	if !ok || env.acked {
		s.mu.Unlock()
		return
	}
	if !env.written { // still queued: the clock starts when it is sent
		env.timer = time.AfterFunc(s.opts.AckTimeout, func() { s.timeout(id) })
		s.mu.Unlock()
		return
	}
	delete(s.sock.pending, id)
	retry := env.attempt < s.opts.MaxRetries
	var next *envelope
	if retry {
		next = &envelope{id: s.nextEnvelopeLocked(), kind: env.kind, eventID: env.eventID,
			payload: env.payload, attempt: env.attempt + 1}
	}
	s.mu.Unlock()
	if next != nil {
		s.send(next)
	}
}

func (s *Server) nextEnvelopeLocked() string {
	s.sock.seq++
	return "E" + strconv.Itoa(s.sock.seq)
}

// IgnoreAcks drops the next n acks of known envelopes, so those events
// are redelivered as if the acks were lost.
func (s *Server) IgnoreAcks(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sock.ignore += n
}

// Redeliver sends event eventID again now, with a new envelope id and the
// next retry_attempt, whether or not it was acked.
func (s *Server) Redeliver(eventID string) bool {
	s.mu.Lock()
	env, ok := s.sock.events[eventID]
	if !ok {
		s.mu.Unlock()
		return false
	}
	next := &envelope{id: s.nextEnvelopeLocked(), kind: env.kind, eventID: eventID, payload: env.payload,
		attempt: env.attempt + 1}
	s.mu.Unlock()
	s.send(next)
	return true
}

// DropWhileDisconnected makes events posted while no client is
// connected vanish (Slack gave up on them) instead of being queued.
func (s *Server) DropWhileDisconnected(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sock.dropAway = on
}

// RefuseConnections makes apps.connections.open answer 503 while on:
// the client stays away (retrying with backoff) until it is turned off.
func (s *Server) RefuseConnections(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sock.refuse = on
}

// DroppedEvents is how many events DropWhileDisconnected discarded.
func (s *Server) DroppedEvents() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock.dropped
}

// Acks is every ack the client wrote, in order.
func (s *Server) Acks() []Ack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ack(nil), s.sock.acks...)
}

// Unacked is how many envelopes wait for an ack (sent or queued).
func (s *Server) Unacked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sock.pending)
}

// Opens is how many times apps.connections.open handed out a socket URL.
func (s *Server) Opens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock.opens
}

// Connected reports whether a client socket is open.
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sock.conns) > 0
}

func (s *Server) current() *sockConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.sock.conns); n > 0 {
		return s.sock.conns[n-1]
	}
	return nil
}

// Disconnect sends Slack's disconnect envelope (reason: refresh_requested,
// link_disabled, …); the client reconnects, and the new socket replaces
// this one.
func (s *Server) Disconnect(reason string) bool {
	c := s.current()
	if c == nil {
		return false
	}
	return c.write(reply{"type": "disconnect", "reason": reason, "debug_info": reply{"host": "fake"}}) == nil
}

// DropConnection closes the current socket's TCP connection abruptly.
func (s *Server) DropConnection() bool {
	c := s.current()
	if c == nil {
		return false
	}
	_ = c.ws.UnderlyingConn().Close()
	return true
}

// StopPings stops pinging the current socket: the client's ping timeout
// redials.
func (s *Server) StopPings() bool {
	c := s.current()
	if c == nil {
		return false
	}
	c.noPings.Store(true)
	return true
}

func (s *Server) closeSockets() {
	s.mu.Lock()
	s.closed = true
	conns := s.sock.conns
	s.sock.conns = nil
	for _, env := range s.sock.pending {
		if env.timer != nil {
			env.timer.Stop()
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}
