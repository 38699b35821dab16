// Package slacktest is a fake Slack for tests: the Web API methods the
// adapter calls and a Socket Mode websocket, over httptest on 127.0.0.1,
// speaking the wire format slack-go speaks (form bodies, ok/error JSON,
// envelopes and acks). It keeps what was posted, edited, deleted and
// uploaded, redelivers unacknowledged events as Slack does, and injects
// faults: 429 with Retry-After, 5xx, lost answers, held requests, dropped
// sockets.
package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// The fake workspace's identity.
const (
	BotToken  = "xoxb-fake"
	AppToken  = "xapp-fake"
	BotUserID = "UBOT"
	BotID     = "BBOT"
	TeamID    = "T1"
	AppID     = "A1"
)

// Message is one message the fake holds, posted by a user or the bot.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string // "" for a top-level message
	User     string
	BotID    string // BotID for the bot's posts
	Text     string
	Blocks   json.RawMessage
	Metadata json.RawMessage // {"event_type","event_payload"} or nil
	Files    []File
	Edits    int
}

// Update is one chat.update the fake applied.
type Update struct {
	Channel, TS, Text string
	Blocks            json.RawMessage
}

// Ephemeral is one chat.postEphemeral.
type Ephemeral struct {
	Channel, User, Text, ThreadTS string
}

// Response is one answer posted to a slash command's response_url.
type Response struct {
	TriggerID, ResponseType, Text string
}

// Status is one assistant.threads.setStatus.
type Status struct {
	Channel, ThreadTS, Status string
}

// Options tune the fake's timing; the zero value is fit for tests.
type Options struct {
	PingEvery  time.Duration // websocket pings; default 250 ms
	AckTimeout time.Duration // before an unacked events_api envelope is redelivered; default 500 ms
	// MaxRetries bounds redeliveries of one event; default 3 (Slack's).
	MaxRetries int
}

// Server is the fake Slack. Create it with New; Close it when done.
type Server struct {
	srv  *httptest.Server
	opts Options

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change (WaitFor)
	tsSeq   int64         // microseconds of the last ts handed out
	idSeq   int
	msgs    map[string][]*Message // by channel, in ts order
	dmUsers map[string]string     // the person of each of the bot's DMs, by channel
	peerDMs map[string]bool       // DMs between two people, which the bot cannot see
	users   map[string]User
	updates []Update
	deleted []string // "<channel>:<ts>"
	ephems  []Ephemeral
	resps   []Response
	stats   []Status
	calls   map[string]int
	echo    bool

	files     map[string]*storedFile
	uploads   []Upload
	downloads int

	faults faults
	sock   socketState
	closed bool
}

// User is a workspace member users.info knows.
type User struct {
	ID, Name, RealName, DisplayName string
}

// New starts a fake Slack on 127.0.0.1.
func New(opts Options) *Server {
	if opts.PingEvery <= 0 {
		opts.PingEvery = 250 * time.Millisecond
	}
	if opts.AckTimeout <= 0 {
		opts.AckTimeout = 500 * time.Millisecond
	}
	if opts.MaxRetries <= 0 {
		opts.MaxRetries = 3
	}
	s := &Server{
		opts:    opts,
		changed: make(chan struct{}),
		tsSeq:   time.Now().UnixMicro(),
		msgs:    map[string][]*Message{},
		dmUsers: map[string]string{},
		peerDMs: map[string]bool{},
		users:   map[string]User{},
		calls:   map[string]int{},
		files:   map[string]*storedFile{},
	}
	s.faults.init()
	s.sock.init()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.handleAPI)
	mux.HandleFunc("/ws", s.handleSocket)
	mux.HandleFunc("/upload/", s.handleUpload)
	mux.HandleFunc("/files/", s.handleDownload)
	mux.HandleFunc("/response/", s.handleResponse)
	s.srv = httptest.NewServer(mux)
	return s
}

// Close stops the server, its sockets and its held requests.
func (s *Server) Close() {
	s.closeSockets()
	s.faults.releaseAll()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// URL is the server's base URL (http://127.0.0.1:port).
func (s *Server) URL() string { return s.srv.URL }

// APIURL is what slack.api_url should be: URL()+"/api/".
func (s *Server) APIURL() string { return s.srv.URL + "/api/" }

// AddUser makes users.info know u.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = u
}

// SetEcho makes the fake send the bot's own posts and edits back as
// message events (with bot_id), as Slack does when subscribed.
func (s *Server) SetEcho(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.echo = on
}

// WaitFor waits until cond holds, re-checking on every change of the
// fake's state; false when timeout passed first.
func (s *Server) WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return cond()
		}
	}
}

// Changed is closed at the fake's next change of state.
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// notifyLocked wakes WaitFor; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// nextTSLocked is a new ts, strictly greater than every earlier one.
func (s *Server) nextTSLocked() string {
	s.tsSeq++
	return FormatTS(s.tsSeq)
}

// FormatTS writes microseconds since the epoch as a Slack ts.
func FormatTS(micros int64) string {
	return fmt.Sprintf("%d.%06d", micros/1e6, micros%1e6)
}

func (s *Server) nextIDLocked(prefix string) string {
	s.idSeq++
	return fmt.Sprintf("%s%d", prefix, s.idSeq)
}

// Calls is how many requests reached method (after faults).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Sent is the bot's messages in channel (any thread), oldest first.
func (s *Server) Sent(channel string) []Message {
	return s.messages(func(m *Message) bool { return m.Channel == channel && m.BotID == BotID })
}

// AllSent is the bot's messages everywhere, oldest first per channel.
func (s *Server) AllSent() []Message {
	return s.messages(func(m *Message) bool { return m.BotID == BotID })
}

// Thread is every message of the thread rooted at ts in channel, the root
// first.
func (s *Server) Thread(channel, ts string) []Message {
	return s.messages(func(m *Message) bool {
		return m.Channel == channel && (m.TS == ts || m.ThreadTS == ts)
	})
}

// Message is the message channel/ts, if the fake holds it.
func (s *Server) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.findLocked(channel, ts); m != nil {
		return copyMessage(m), true
	}
	return Message{}, false
}

func (s *Server) messages(keep func(*Message) bool) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, ch := range sortedKeys(s.msgs) {
		for _, m := range s.msgs[ch] {
			if keep(m) {
				out = append(out, copyMessage(m))
			}
		}
	}
	return out
}

func copyMessage(m *Message) Message {
	c := *m
	c.Files = append([]File(nil), m.Files...)
	return c
}

func (s *Server) findLocked(channel, ts string) *Message {
	for _, m := range s.msgs[channel] {
		if m.TS == ts {
			return m
		}
	}
	return nil
}

// Updates is every chat.update applied, in order.
func (s *Server) Updates() []Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Update(nil), s.updates...)
}

// Deleted is every message removed by chat.delete ("<channel>:<ts>").
func (s *Server) Deleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deleted...)
}

// Ephemerals is every chat.postEphemeral, in order.
func (s *Server) Ephemerals() []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ephemeral(nil), s.ephems...)
}

// Responses is every answer posted to a response_url, in order.
func (s *Server) Responses() []Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Response(nil), s.resps...)
}

// handleResponse takes an answer to a slash command, as Slack's
// response_url does (JSON with response_type and text).
func (s *Server) handleResponse(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ResponseType string `json:"response_type"`
		Text         string `json:"text"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, "bad response", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.resps = append(s.resps, Response{TriggerID: strings.TrimPrefix(r.URL.Path, "/response/"),
		ResponseType: body.ResponseType, Text: body.Text})
	s.notifyLocked()
	s.mu.Unlock()
	_, _ = w.Write([]byte("ok"))
}

// PeerDM makes channel a DM between two people, not with the bot: a slash
// command works there, but the bot cannot read or post in it
// (conversations.info answers channel_not_found).
func (s *Server) PeerDM(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peerDMs[channel] = true
}

// noteDMLocked records user as the person of the bot's DM channel (the
// first to use it).
func (s *Server) noteDMLocked(channel, user string) {
	if strings.HasPrefix(channel, "D") && !s.peerDMs[channel] && s.dmUsers[channel] == "" {
		s.dmUsers[channel] = user
	}
}

// Statuses is every assistant.threads.setStatus, in order.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Status(nil), s.stats...)
}

// Markdown is the text of m's markdown blocks, concatenated: the part as
// the adapter rendered it.
func Markdown(m Message) string {
	var b strings.Builder
	for _, blk := range decodeBlocks(m.Blocks) {
		if blk.Type == "markdown" {
			b.WriteString(blk.Text.str())
		}
	}
	return b.String()
}
