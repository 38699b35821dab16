package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
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

// gatewayState is the gateway session of one shard: dispatches are
// numbered and kept, so a RESUME replays what the client missed. Without
// sharding there is one, shard 0 of 1.
type gatewayState struct {
	srv   *Server
	shard int

	mu        sync.Mutex
	count     int // the shard count its client identified with
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

func newGatewayState(s *Server, shard int) *gatewayState {
	return &gatewayState{srv: s, shard: shard, count: 1, changed: make(chan struct{})}
}

// serves reports whether guild guildID's events go to this shard: Discord
// sends a guild to shard (guild_id >> 22) % shard_count, and DMs (no
// guild) to shard 0.
func (g *gatewayState) serves(guildID string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return shardOf(guildID, g.count) == g.shard
}

func shardOf(guildID string, count int) int {
	if guildID == "" || count <= 1 {
		return 0
	}
	id, err := strconv.ParseUint(guildID, 10, 64)
	if err != nil {
		return 0
	}
	return int((id >> 22) % uint64(count))
}

// shardState returns shard id's gateway state, creating it on first use.
func (s *Server) shardState(id int) *gatewayState {
	s.shardMu.Lock()
	defer s.shardMu.Unlock()
	g, ok := s.shards[id]
	if !ok {
		g = newGatewayState(s, id)
		s.shards[id] = g
	}
	return g
}

func (s *Server) shardStates() []*gatewayState {
	s.shardMu.Lock()
	defer s.shardMu.Unlock()
	out := make([]*gatewayState, 0, len(s.shards))
	for _, g := range s.shards {
		out = append(out, g)
	}
	return out
}

// dispatch sends an event of guild guildID ("" for DMs) to the shard that
// serves it; with no session on that shard it is lost, as on Discord.
func (s *Server) dispatch(guildID, typ string, d any) {
	for _, g := range s.shardStates() {
		if g.serves(guildID) {
			g.dispatch(typ, d)
		}
	}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	conn := &wsConn{c: c}
	defer func() {
		for _, g := range s.shardStates() {
			g.forget(conn)
		}
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
		Token   string  `json:"token"`
		Intents int     `json:"intents"`
		Shard   *[2]int `json:"shard"`
	}
	_ = json.Unmarshal(d, &id)
	if id.Token != "Bot "+Token {
		closeWith(conn, 4004, "Authentication failed.")
		return
	}
	shard, count := 0, 1
	if id.Shard != nil {
		shard, count = id.Shard[0], id.Shard[1]
	}
	if count < 1 || shard < 0 || shard >= count {
		closeWith(conn, 4010, "Invalid shard.")
		return
	}
	s.mu.Lock()
	s.identifies++
	s.intents = id.Intents
	var guilds []*discordgo.Guild
	for _, guild := range s.guildsLocked() {
		if shardOf(guild.ID, count) == shard {
			guilds = append(guilds, guild)
		}
	}
	s.mu.Unlock()

	g := s.shardState(shard)
	g.mu.Lock()
	g.count = count
	g.sessionN++
	g.sessionID = fmt.Sprintf("session-%d-%d", shard, g.sessionN)
	g.seq, g.log, g.conn = 0, nil, conn
	unavailable := make([]map[string]any, 0, len(guilds))
	for _, guild := range guilds {
		unavailable = append(unavailable, map[string]any{"id": guild.ID, "unavailable": true})
	}
	ready := map[string]any{
		"v": 9, "user": s.botUser(), "session_id": g.sessionID, "guilds": unavailable,
		"application": map[string]any{"id": AppID, "flags": 0},
	}
	if id.Shard != nil {
		ready["shard"] = []int{shard, count}
	}
	g.dispatchLocked("READY", ready)
	for _, guild := range guilds {
		g.dispatchLocked("GUILD_CREATE", guild)
	}
	g.notifyLocked()
	g.mu.Unlock()
}

func closeWith(conn *wsConn, code int, reason string) {
	_ = conn.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
}

func (s *Server) resume(conn *wsConn, d json.RawMessage) {
	var rs struct {
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	_ = json.Unmarshal(d, &rs)
	g := s.sessionState(rs.SessionID)
	if g == nil {
		_ = conn.write(map[string]any{"op": 9, "d": false})
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if rs.SessionID != g.sessionID {
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

// sessionState is the shard whose live session has id, or nil.
func (s *Server) sessionState(id string) *gatewayState {
	if id == "" {
		return nil
	}
	for _, g := range s.shardStates() {
		g.mu.Lock()
		match := g.sessionID == id
		g.mu.Unlock()
		if match {
			return g
		}
	}
	return nil
}

// guildsLocked is the fake's guilds with their channels and threads,
// sorted by id: GuildID always, and every guild a channel names.
func (s *Server) guildsLocked() []*discordgo.Guild {
	byID := map[string]*discordgo.Guild{GuildID: {ID: GuildID, Name: "fake guild"}}
	for _, ch := range s.channels {
		c := *ch
		if c.GuildID == "" {
			continue
		}
		g := byID[c.GuildID]
		if g == nil {
			g = &discordgo.Guild{ID: c.GuildID, Name: "guild " + c.GuildID}
			byID[c.GuildID] = g
		}
		if c.IsThread() {
			g.Threads = append(g.Threads, &c)
		} else {
			g.Channels = append(g.Channels, &c)
		}
	}
	out := make([]*discordgo.Guild, 0, len(byID))
	for _, g := range byID {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
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

// The controls below act on shard 0, the only one without sharding.

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
