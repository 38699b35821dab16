package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// frame is one gateway payload.
type frame struct {
	Op   int             `json:"op"`
	D    json.RawMessage `json:"d"`
	S    int64           `json:"s,omitempty"`
	Type string          `json:"t,omitempty"`
}

// gatewayState is the fake's single gateway session: dispatches are
// numbered and kept, so a RESUME replays what the client missed.
type gatewayState struct {
	srv *Server

	mu        sync.Mutex
	sessionN  int
	sessionID string
	seq       int64
	log       []frame
	conn      *wsConn
	changed   chan struct{} // closed and replaced on every session change
}

type wsConn struct {
	mu sync.Mutex
	c  *websocket.Conn
}

func (c *wsConn) write(v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.WriteJSON(v)
}

func newGatewayState(s *Server) *gatewayState {
	return &gatewayState{srv: s, changed: make(chan struct{})}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	conn := &wsConn{c: c}
	defer func() {
		s.gw.forget(conn)
		_ = c.Close()
	}()
	hello := map[string]any{"heartbeat_interval": s.heartbeat.Milliseconds()}
	if err := conn.write(map[string]any{"op": 10, "d": hello}); err != nil {
		return
	}
	for {
		var f frame
		if err := c.ReadJSON(&f); err != nil {
			return
		}
		switch f.Op {
		case 1:
			_ = conn.write(map[string]any{"op": 11})
		case 2:
			s.identify(conn, f.D)
		case 6:
			s.resume(conn, f.D)
		}
	}
}

func (s *Server) identify(conn *wsConn, d json.RawMessage) {
	var id struct {
		Token   string `json:"token"`
		Intents int    `json:"intents"`
	}
	_ = json.Unmarshal(d, &id)
	if id.Token != "Bot "+Token {
		_ = conn.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."), time.Now().Add(time.Second))
		return
	}
	s.mu.Lock()
	s.identifies++
	s.intents = id.Intents
	guild := s.guildLocked()
	s.mu.Unlock()

	g := s.gw
	g.mu.Lock()
	g.sessionN++
	g.sessionID = fmt.Sprintf("session-%d", g.sessionN)
	g.seq, g.log, g.conn = 0, nil, conn
	g.dispatchLocked("READY", map[string]any{
		"v": 9, "user": s.botUser(), "session_id": g.sessionID,
		"guilds":      []map[string]any{{"id": GuildID, "unavailable": true}},
		"application": map[string]any{"id": AppID, "flags": 0},
	})
	g.dispatchLocked("GUILD_CREATE", guild)
	g.notifyLocked()
	g.mu.Unlock()
}

func (s *Server) resume(conn *wsConn, d json.RawMessage) {
	var rs struct {
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	_ = json.Unmarshal(d, &rs)
	g := s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	if rs.SessionID == "" || rs.SessionID != g.sessionID {
		_ = conn.write(map[string]any{"op": 9, "d": false})
		return
	}
	s.mu.Lock()
	s.resumes++
	s.mu.Unlock()
	g.conn = conn
	for _, f := range g.log {
		if f.S > rs.Seq {
			_ = conn.write(f)
		}
	}
	g.dispatchLocked("RESUMED", map[string]any{})
	g.notifyLocked()
}

func (s *Server) guildLocked() *discordgo.Guild {
	g := &discordgo.Guild{ID: GuildID, Name: "fake guild"}
	for _, ch := range s.channels {
		c := *ch
		switch {
		case c.GuildID == "":
		case c.IsThread():
			g.Threads = append(g.Threads, &c)
		default:
			g.Channels = append(g.Channels, &c)
		}
	}
	return g
}

// dispatch numbers an event, keeps it for replay and sends it if a client
// is connected. Without a session the event is not kept (as on Discord).
func (g *gatewayState) dispatch(typ string, d any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sessionID == "" {
		return
	}
	g.dispatchLocked(typ, d)
}

func (g *gatewayState) dispatchLocked(typ string, d any) {
	raw, err := json.Marshal(d)
	if err != nil {
		panic(fmt.Sprintf("discordtest: marshal %s: %v", typ, err)) // a bug in the fake itself
	}
	g.seq++
	f := frame{Op: 0, S: g.seq, Type: typ, D: raw}
	g.log = append(g.log, f)
	if g.conn != nil {
		if err := g.conn.write(f); err != nil {
			g.conn = nil
		}
	}
}

func (g *gatewayState) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *gatewayState) forget(conn *wsConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn == conn {
		g.conn = nil
		g.notifyLocked()
	}
}

func (g *gatewayState) dropConn() {
	g.mu.Lock()
	conn := g.conn
	g.conn = nil
	g.mu.Unlock()
	if conn != nil {
		_ = conn.c.Close()
	}
}

// DropConnection closes the client's socket without a close frame, as a
// network failure would. Events dispatched until the client resumes are
// replayed on RESUME.
func (s *Server) DropConnection() { s.gw.dropConn() }

// Reconnect sends op 7: the client must reconnect and resume.
func (s *Server) Reconnect() { s.gw.sendOp(7, nil) }

// InvalidateSession sends op 9 (not resumable) and forgets the session:
// the client identifies again and gets a new READY.
func (s *Server) InvalidateSession() {
	s.gw.mu.Lock()
	s.gw.sessionID = ""
	s.gw.mu.Unlock()
	s.gw.sendOp(9, false)
}

func (g *gatewayState) sendOp(op int, d any) {
	g.mu.Lock()
	conn := g.conn
	g.mu.Unlock()
	if conn != nil {
		_ = conn.write(map[string]any{"op": op, "d": d})
	}
}

// WaitSessions blocks until the gateway has seen at least the given
// numbers of IDENTIFYs and RESUMEs with a client connected, or the timeout
// passes; it reports whether the condition was met.
func (s *Server) WaitSessions(identifies, resumes int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		s.gw.mu.Lock()
		changed, connected := s.gw.changed, s.gw.conn != nil
		s.gw.mu.Unlock()
		i, r, _ := s.Sessions()
		if connected && i >= identifies && r >= resumes {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// Connected reports whether a client is connected with a live session.
func (s *Server) Connected() bool {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	return s.gw.conn != nil
}

// Dispatch sends a gateway event of type typ with the raw payload d as it
// is (replay tests feed stored events through it); it is dropped, like any
// dispatch, while no session is identified.
func (s *Server) Dispatch(typ string, d json.RawMessage) { s.gw.dispatch(typ, d) }
