// Package discordtest is a fake Discord (REST + gateway websocket) for
// tests. It speaks enough of the wire format for discordgo: /gateway,
// HELLO/IDENTIFY/READY, shards (a session per shard, guilds routed to the
// shard of their id), heartbeats, RESUME with replay, op 7 and op 9,
// dispatches, messages (2,000-character limit), edits, typing, threads,
// message components (buttons and string selects, checked against
// Discord's limits), interactions (presses, choices, the member's
// permissions), application commands, history and injected 429s.
package discordtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Fixed ids of the fake world.
const (
	BotID   = "1000"
	AppID   = "1000"
	GuildID = "2000"
	Token   = "fake-token"
)

// SentMessage is a message the bot sent (or edited) through REST.
type SentMessage struct {
	ID, ChannelID, Content, ReplyTo string
	ButtonIDs                       []string // its buttons' custom ids (not a select menu's)
	// Components are its buttons and select menus: those sent with it
	// (Sent, Edits) or its current ones (BotMessages).
	Components []Component
	// ComponentsSent: the request carried components. An edit without
	// them leaves the message's as they were; one with none removes them.
	ComponentsSent bool
	Files          []Attachment // uploaded with the message (multipart)
	Silent         bool         // sent with the SUPPRESS_NOTIFICATIONS flag
	// MentionsParsed and MentionsUsers are its allowed_mentions: the
	// kinds of mention parsed from the text, and the users it may notify.
	MentionsParsed, MentionsUsers []string
}

// InteractionResponse is the bot's answer to an interaction.
type InteractionResponse struct {
	InteractionID string
	Type          int
	Content       string
	Ephemeral     bool
}

// Server is the fake. Create it with New and Close it when done.
type Server struct {
	http *httptest.Server

	mu             sync.Mutex
	lastID         uint64
	channels       map[string]*discordgo.Channel
	forbidden      map[string]bool
	renameDenied   map[string]bool // threads the bot may not rename (names.go)
	renames        []Rename
	members        map[string][]string    // user id → role ids
	permissions    map[string]int64       // user id → member.permissions of its interactions
	components     map[string][]Component // channel + "/" + message id → a bot message's current components
	history        map[string][]*discordgo.Message
	sent           map[string][]SentMessage
	creates        map[string][]string           // content of every create handled, nonce replays included
	nonces         map[string]*discordgo.Message // channel + nonce → message (enforce_nonce)
	edits          []SentMessage
	deleted        []SentMessage // messages the bot deleted
	typing         map[string]int
	threadsMade    []discordgo.Channel
	responses      []InteractionResponse
	commands       []string
	commandOptions map[string][]string // registered command → its options' names
	posts          map[string]int      // POST attempts per path, including 429s
	inject         map[string][]injected
	holds          map[string][]*Held // requests to hold, by method + path
	held           []*Held            // holds taken, released on Close
	lose           map[string]int     // answers to lose, by method + path
	identifies     int
	resumes        int
	intents        int
	gw             *gatewayState // shard 0, the whole gateway without sharding
	shardMu        sync.Mutex
	shards         map[int]*gatewayState
	heartbeat      time.Duration
	changed        chan struct{}   // closed and replaced when the bot sends or edits
	files          map[string]File // attachment id → file
	downloads      []string        // names of the attachments fetched, in order
}

// New starts the fake on 127.0.0.1 with one guild and its text channels.
func New(channelIDs ...string) *Server {
	s := &Server{
		channels:     map[string]*discordgo.Channel{},
		forbidden:    map[string]bool{},
		renameDenied: map[string]bool{},
		members:      map[string][]string{},
		permissions:  map[string]int64{},
		components:   map[string][]Component{},
		history:      map[string][]*discordgo.Message{},
		sent:         map[string][]SentMessage{},
		creates:      map[string][]string{},
		nonces:       map[string]*discordgo.Message{},
		typing:       map[string]int{},
		posts:        map[string]int{},
		inject:       map[string][]injected{},
		holds:        map[string][]*Held{},
		lose:         map[string]int{},
		heartbeat:    time.Second,
		changed:      make(chan struct{}),
	}
	for _, id := range channelIDs {
		s.channels[id] = &discordgo.Channel{ID: id, GuildID: GuildID, Type: discordgo.ChannelTypeGuildText, Name: "c" + id}
	}
	s.gw = newGatewayState(s, 0)
	s.shards = map[int]*gatewayState{0: s.gw}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws/", s.serveGateway) // discordgo appends "/" to the gateway URL
	mux.HandleFunc("/api/", s.serveREST)
	// Attachments are served outside the mux: their names may hold
	// anything, "../" included, which the mux would clean and redirect.
	s.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/attachments/") {
			s.serveAttachment(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	return s
}

// URL is the base URL to give the adapter as APIURL.
func (s *Server) URL() string { return s.http.URL }

// Close stops the server and drops every connection.
func (s *Server) Close() {
	s.mu.Lock()
	for _, h := range s.held {
		h.Release()
	}
	for _, q := range s.holds {
		for _, h := range q {
			h.Release()
		}
	}
	s.mu.Unlock()
	for _, g := range s.shardStates() {
		g.dropConn()
	}
	s.http.CloseClientConnections()
	s.http.Close()
}

// AddGuildChannel adds a text channel in guild guildID, another guild than
// GuildID: with sharding, a guild's events go only to its shard.
func (s *Server) AddGuildChannel(id, guildID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[id] = &discordgo.Channel{ID: id, GuildID: guildID, Type: discordgo.ChannelTypeGuildText, Name: "c" + id}
}

// AddThread adds an existing thread under a channel, owned by ownerID.
func (s *Server) AddThread(id, parentID, ownerID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	guildID := GuildID
	if parent := s.channels[parentID]; parent != nil && parent.GuildID != "" {
		guildID = parent.GuildID
	}
	s.channels[id] = &discordgo.Channel{ID: id, GuildID: guildID, ParentID: parentID, OwnerID: ownerID,
		Type: discordgo.ChannelTypeGuildPublicThread, Name: "t" + id}
}

// AddDM adds a DM channel with a user.
func (s *Server) AddDM(id, userID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[id] = &discordgo.Channel{ID: id, Type: discordgo.ChannelTypeDM,
		Recipients: []*discordgo.User{{ID: userID, Username: "u" + userID}}}
}

// SetRoles gives a guild member roles.
func (s *Server) SetRoles(userID string, roles ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members[userID] = roles
}

// Forbid makes sends to the channel fail with 403 Missing Access.
func (s *Server) Forbid(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forbidden[channelID] = true
}

// injected is one queued 429: skip requests pass first.
type injected struct {
	skip       int
	retryAfter float64
}

// Inject429 makes the next count requests to method+path (path after
// /api/v9/, e.g. "POST", "channels/10/messages") answer 429 with retry_after.
func (s *Server) Inject429(method, path string, retryAfter time.Duration, count int) {
	for range count {
		s.Inject429After(method, path, 0, retryAfter)
	}
}

// Inject429After lets skip requests to method+path succeed, then answers
// the next one with 429 and retry_after.
func (s *Server) Inject429After(method, path string, skip int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := method + " " + path
	s.inject[key] = append(s.inject[key], injected{skip: skip, retryAfter: retryAfter.Seconds()})
}

// Post is a user message to post.
type Post struct {
	ChannelID, AuthorID, Content string
	MentionBot                   bool
	ReplyTo                      string // message id replied to
	Bot                          bool   // the author is a bot
	// Attachments are served at their CDN URLs (files.go).
	Attachments []File
}

// Post stores a user message in the channel's history and dispatches
// MESSAGE_CREATE (or keeps it for RESUME replay while disconnected). It
// returns the message id.
func (s *Server) Post(p Post) string {
	s.mu.Lock()
	m := &discordgo.Message{
		ID: s.nextIDLocked(), ChannelID: p.ChannelID, Content: p.Content, Type: discordgo.MessageTypeDefault,
		Author: &discordgo.User{ID: p.AuthorID, Username: "u" + p.AuthorID, Bot: p.Bot},
	}
	m.Timestamp = time.Now().UTC()
	if p.MentionBot {
		m.Mentions = []*discordgo.User{s.botUser()}
		if !strings.Contains(m.Content, "<@"+BotID+">") {
			m.Content = "<@" + BotID + "> " + m.Content
		}
	}
	for _, f := range p.Attachments {
		m.Attachments = append(m.Attachments, s.attachLocked(p.ChannelID, f))
	}
	if p.ReplyTo != "" {
		m.Type = discordgo.MessageTypeReply
		m.MessageReference = &discordgo.MessageReference{MessageID: p.ReplyTo, ChannelID: p.ChannelID}
		m.ReferencedMessage = s.findLocked(p.ChannelID, p.ReplyTo)
	}
	s.history[p.ChannelID] = append(s.history[p.ChannelID], m)
	live := *m
	if ch := s.channels[p.ChannelID]; ch != nil && ch.GuildID != "" {
		live.GuildID = ch.GuildID
		live.Member = &discordgo.Member{Roles: s.members[p.AuthorID]}
	}
	s.mu.Unlock()
	s.dispatch(live.GuildID, "MESSAGE_CREATE", &live)
	return m.ID
}

// PressButton dispatches a component interaction on a bot message and
// returns the interaction id.
func (s *Server) PressButton(channelID, messageID, customID, userID string) string {
	return s.interaction(channelID, userID, discordgo.InteractionMessageComponent, map[string]any{
		"custom_id": customID, "component_type": discordgo.ButtonComponent,
	}, map[string]any{"id": messageID, "channel_id": channelID})
}

// SlashCommand dispatches an application command and returns the
// interaction id.
func (s *Server) SlashCommand(channelID, name, userID string) string {
	return s.interaction(channelID, userID, discordgo.InteractionApplicationCommand, map[string]any{
		"id": "9" + name, "name": name, "type": 1,
	}, nil)
}

// SlashCommandWith is SlashCommand with the command's string options
// (name → value).
func (s *Server) SlashCommandWith(channelID, name, userID string, options map[string]string) string {
	var opts []map[string]any
	for k, v := range options {
		opts = append(opts, map[string]any{"name": k, "type": 3, "value": v})
	}
	return s.interaction(channelID, userID, discordgo.InteractionApplicationCommand, map[string]any{
		"id": "9" + name, "name": name, "type": 1, "options": opts,
	}, nil)
}

func (s *Server) interaction(channelID, userID string, typ discordgo.InteractionType, data, message map[string]any) string {
	s.mu.Lock()
	id := s.nextIDLocked()
	user := map[string]any{"id": userID, "username": "u" + userID}
	ev := map[string]any{
		"id": id, "application_id": AppID, "type": typ, "data": data, "channel_id": channelID,
		"token": "itoken-" + id, "version": 1,
	}
	if ch := s.channels[channelID]; ch != nil && ch.GuildID != "" {
		ev["guild_id"] = ch.GuildID
		ev["member"] = map[string]any{"user": user, "roles": nonNil(s.members[userID]), "permissions": s.permissionsLocked(userID)}
	} else {
		ev["user"] = user
	}
	if message != nil {
		ev["message"] = message
	}
	guildID, _ := ev["guild_id"].(string)
	s.mu.Unlock()
	s.dispatch(guildID, "INTERACTION_CREATE", ev)
	return id
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Sent returns the messages the bot sent to a channel, in order.
func (s *Server) Sent(channelID string) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.sent[channelID]...)
}

// Deleted returns the messages the bot deleted, in order.
func (s *Server) Deleted() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.deleted...)
}

// Edits returns the bot's message edits, in order.
func (s *Server) Edits() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.edits...)
}

// Typing returns how many typing requests a channel got.
func (s *Server) Typing(channelID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.typing[channelID]
}

// Responses returns the interaction responses, in order.
func (s *Server) Responses() []InteractionResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]InteractionResponse(nil), s.responses...)
}

// Commands returns the names of the registered application commands.
func (s *Server) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.commands...)
}

// CreateRequests returns the content of every message create Discord
// handled in a channel, in order: those answered with an earlier message
// (the same nonce) included, those dropped before handling not.
func (s *Server) CreateRequests(channelID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.creates[channelID]...)
}

// PostAttempts counts POST requests to a path (after /api/v9/), 429s included.
func (s *Server) PostAttempts(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts[path]
}

// Sessions reports how many IDENTIFYs and RESUMEs the gateway saw and the
// intents of the last IDENTIFY.
func (s *Server) Sessions() (identifies, resumes, intents int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identifies, s.resumes, s.intents
}

// Channel returns a channel (thread, DM, text channel) by id, if it exists.
func (s *Server) Channel(id string) (discordgo.Channel, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.channels[id]
	if !ok {
		return discordgo.Channel{}, false
	}
	return *ch, true
}

// BotMessages returns the bot's messages in a channel with their current
// (edited) text, in order.
func (s *Server) BotMessages(channelID string) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SentMessage
	for _, m := range s.history[channelID] {
		if m.Author != nil && m.Author.ID == BotID {
			comps := s.components[channelID+"/"+m.ID]
			sent := SentMessage{ID: m.ID, ChannelID: channelID, Content: m.Content,
				ButtonIDs: buttonIDs(comps), Components: append([]Component(nil), comps...)}
			if m.MessageReference != nil {
				sent.ReplyTo = m.MessageReference.MessageID
			}
			out = append(out, sent)
		}
	}
	return out
}

// WaitFor blocks until cond holds, re-checking whenever the bot sends or
// edits a message, and reports whether it held before the timeout.
func (s *Server) WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// notifyLocked wakes WaitFor; callers hold s.mu.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) botUser() *discordgo.User {
	return &discordgo.User{ID: BotID, Username: "gatewayd", Bot: true}
}

// nextIDLocked returns a fresh snowflake: time-based and increasing.
func (s *Server) nextIDLocked() string {
	id := uint64(time.Now().UnixMilli()-1420070400000) << 22
	if id <= s.lastID {
		id = s.lastID + 1
	}
	s.lastID = id
	return formatID(id)
}

func (s *Server) findLocked(channelID, id string) *discordgo.Message {
	for _, m := range s.history[channelID] {
		if m.ID == id {
			c := *m
			return &c
		}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg})
}

// EditPost changes a user message's content, as its author editing it
// does, and dispatches MESSAGE_UPDATE (mentions kept, the bot's mention
// added back when the message had it). It reports false for a message
// the channel does not have.
func (s *Server) EditPost(channelID, messageID, content string) bool {
	s.mu.Lock()
	m := s.findLocked(channelID, messageID)
	if m == nil {
		s.mu.Unlock()
		return false
	}
	for _, u := range m.Mentions {
		if u.ID == BotID && !strings.Contains(content, "<@"+BotID+">") {
			content = "<@" + BotID + "> " + content
		}
	}
	m.Content = content
	now := time.Now().UTC()
	m.EditedTimestamp = &now
	live := *m
	if ch := s.channels[channelID]; ch != nil && ch.GuildID != "" {
		live.GuildID = ch.GuildID
		live.Member = &discordgo.Member{Roles: s.members[m.Author.ID]}
	}
	s.mu.Unlock()
	s.dispatch(live.GuildID, "MESSAGE_UPDATE", &live)
	return true
}
