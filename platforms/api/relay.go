package api

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// Streaming across nodes (cluster mode). A request held by a node that
// does not own its lane gets what a request on the owner gets: the owner's
// platform offers the Relay what it streams for messages with no request
// of its own (the reply as it grows, the work view) and every lane notice
// (with its approval or question); the node holding the request reads the
// lane's new events when told (StreamNotified) or at its SharedPoll, and
// hands them to its waiters as if they had come from its own gateway.
// Approvals and questions are answered where they live: a list, decision
// or answer for a lane whose requests live on another node is a call to
// that node (relaycall.go).

// Relay carries a lane's stream and calls between the nodes of a cluster;
// the cluster node implements it.
type Relay interface {
	// Offer hands an event to the other nodes; it never blocks.
	Offer(ev RelayEvent)
	// Position is the newest event's id: a request registered now is
	// shown the lane events after it.
	Position(ctx context.Context) (int64, error)
	// Since returns up to limit events of the lane after id after, oldest
	// first, that other nodes offered.
	Since(ctx context.Context, sessionKey string, after int64, limit int) ([]RelayEvent, error)
	// CallOwner asks the node owning the lane to run op (ServeCall there)
	// and returns its reply, or ErrNoRemoteOwner.
	CallOwner(ctx context.Context, sessionKey, op string, body []byte) ([]byte, error)
	// Flush waits until what was offered before it is written, or ctx
	// ends.
	Flush(ctx context.Context)
	// Serves reports whether this node runs the lane now.
	Serves(sessionKey string) bool
}

// RelayEvent is one event of a lane's stream.
type RelayEvent struct {
	ID         int64
	SessionKey string
	// MessageID is the message a preview or work view is for; "" for a
	// lane notice.
	MessageID string
	Kind      string
	Body      []byte
}

// ErrNoRemoteOwner is CallOwner's answer when no other node owns the lane.
var ErrNoRemoteOwner = errors.New("api: no other node owns the lane")

// Kinds of relay events. relayEnd ends a message's stream (its answer is
// recorded): the relay deletes its preview and work view.
const (
	relayPreview  = "preview"
	relayProgress = "progress"
	relayNotice   = "notice"
	relayEnd      = "end"
)

// relayPage is how many events one read takes.
const relayPage = 256

// flushTimeout bounds the wait for the relay before an answer is
// recorded (the database slow: the answer goes first).
const flushTimeout = 2 * time.Second

// relayNote is a lane notice as relayed.
type relayNote struct {
	Row      int64                    `json:"row,omitempty"`
	Text     string                   `json:"text"`
	Approval *gateway.PendingApproval `json:"approval,omitempty"`
	Question *gateway.QuestionPrompt  `json:"question,omitempty"`
}

// remoteStream is a preview or status message of a message with no request
// here: its edits go to the relay.
type remoteStream struct {
	sessionKey, message, kind string
	since                     time.Time
}

// maxRemote bounds the previews relayed at once; past it those older than
// remoteKeep (their message never answered here: the lane moved) go.
const (
	maxRemote  = 1024
	remoteKeep = time.Hour
)

// offerRemote relays the first preview or work view of a message whose
// request is not on this node, and remembers it for its edits. The caller
// holds p.mu.
func (p *Platform) offerRemoteLocked(out gateway.Outbound, id, kind string, body []byte) {
	if p.cfg.Relay == nil || body == nil {
		return
	}
	rs := remoteStream{sessionKey: out.Address.SessionKey(), message: out.InReplyTo, kind: kind, since: time.Now()}
	if len(p.remote) >= maxRemote {
		for pid, old := range p.remote {
			if time.Since(old.since) > remoteKeep {
				delete(p.remote, pid)
			}
		}
	}
	p.remote[id] = rs
	p.offer(rs, body)
}

// editRemote relays an edit of a preview or status message offered
// before, if messageID is one.
func (p *Platform) editRemote(messageID string, body []byte) {
	p.mu.Lock()
	rs, ok := p.remote[messageID]
	p.mu.Unlock()
	if ok && body != nil {
		p.offer(rs, body)
	}
}

func (p *Platform) offer(rs remoteStream, body []byte) {
	p.cfg.Relay.Offer(RelayEvent{SessionKey: rs.sessionKey, MessageID: rs.message, Kind: rs.kind, Body: body})
}

// endRemote ends the relayed stream of message id: its answer is recorded.
func (p *Platform) endRemote(sessionKey, id string) {
	if p.cfg.Relay == nil {
		return
	}
	p.mu.Lock()
	for pid, rs := range p.remote {
		if rs.message == id {
			delete(p.remote, pid)
		}
	}
	p.mu.Unlock()
	p.cfg.Relay.Offer(RelayEvent{SessionKey: sessionKey, MessageID: id, Kind: relayEnd})
}

// offerNotice relays a lane notice (not a file: its bytes are on this
// node's disk). Requests on other nodes that show it report its row sent.
func (p *Platform) offerNotice(out gateway.Outbound, n note) {
	if p.cfg.Relay == nil || n.file != nil {
		return
	}
	body, err := json.Marshal(relayNote{Row: out.ID, Text: n.text, Approval: out.Approval, Question: out.Question})
	if err != nil {
		p.log.Warn("api.relay_encode_failed", zap.Error(err))
		return
	}
	p.cfg.Relay.Offer(RelayEvent{SessionKey: out.Address.SessionKey(), Kind: relayNotice, Body: body})
}

func encodeView(v *gateway.WorkView) []byte {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// positionTimeout bounds the look-up of the relay's position, which a
// request waits for before its message is delivered.
const positionTimeout = time.Second

// relayPosition is where a request registering now on lane sessionKey
// starts reading its notices; unknownPosition when the relay cannot say,
// or need not: a lane this node runs streams here directly (should it
// move meanwhile, the request reads from its next owner its own
// message's events and the notices after that).
func (p *Platform) relayPosition(ctx context.Context, sessionKey string) int64 {
	if p.cfg.Relay == nil {
		return 0
	}
	if p.cfg.Relay.Serves(sessionKey) {
		return unknownPosition
	}
	ctx, cancel := context.WithTimeout(ctx, positionTimeout)
	defer cancel()
	pos, err := p.cfg.Relay.Position(ctx)
	if err != nil {
		p.log.Warn("api.relay_position_failed", zap.Error(err))
		return unknownPosition
	}
	return pos
}

// unknownPosition is a request's position when the relay could not say:
// its first read shows it its own message's preview and work view, and
// only the lane notices after that read (not 10 minutes of old ones).
const unknownPosition = -1

// StreamNotified says another node streamed events of lane sessionKey:
// the requests waiting here on it read them.
func (p *Platform) StreamNotified(sessionKey string) {
	if p.cfg.Relay == nil {
		return
	}
	p.mu.Lock()
	waiting := len(p.laneWaitersLocked(sessionKey)) > 0
	p.mu.Unlock()
	if waiting {
		p.pullSoon(sessionKey)
	}
}

// laneReads serialises the reads of one lane and coalesces the wishes
// for one: a notification during a read makes it read once more.
type laneReads struct {
	mu    sync.Mutex
	again atomic.Bool
}

// pullSoon reads the lane's new events in the background, unless a read
// running now will pick them up.
func (p *Platform) pullSoon(sessionKey string) {
	lr := p.readsOf(sessionKey)
	if lr.again.Swap(true) {
		return // a read is due already
	}
	go p.pullLane(sessionKey)
}

// pullWaiting reads the new events of every lane with requests waiting
// (the poll behind missed notifications).
func (p *Platform) pullWaiting() {
	p.mu.Lock()
	keys := map[string]bool{}
	for _, ws := range p.waiters {
		for _, w := range ws {
			keys[w.key] = true
		}
	}
	p.mu.Unlock()
	for key := range keys {
		p.pullLane(key)
	}
}

// laneWaitersLocked are the requests waiting on lane sessionKey.
func (p *Platform) laneWaitersLocked(sessionKey string) []*waiter {
	var out []*waiter
	for _, ws := range p.waiters {
		for _, w := range ws {
			if w.key == sessionKey {
				out = append(out, w)
			}
		}
	}
	return out
}

// pullLane hands the lane's new events to its waiting requests. One pull
// of a lane runs at a time; the waiters' positions say what each has. A
// lane this node runs has nothing to read: its events are this node's.
func (p *Platform) pullLane(sessionKey string) {
	if p.cfg.Relay.Serves(sessionKey) {
		return
	}
	lr := p.readsOf(sessionKey)
	lr.mu.Lock()
	defer lr.mu.Unlock()
	lr.again.Store(false)
	late := map[*waiter]bool{} // position unknown at the first read: no old notices
	for {
		p.mu.Lock()
		ws := p.laneWaitersLocked(sessionKey)
		p.mu.Unlock()
		if len(ws) == 0 {
			return
		}
		for _, w := range ws {
			if _, known := late[w]; !known {
				late[w] = w.seenPos() == unknownPosition
			}
		}
		after := ws[0].seenPos()
		for _, w := range ws[1:] {
			after = min(after, w.seenPos())
		}
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		evs, err := p.cfg.Relay.Since(ctx, sessionKey, after, relayPage)
		cancel()
		if err != nil {
			p.log.Debug("api.relay_read_failed", zap.String("lane", sessionKey), zap.Error(err))
			return
		}
		for _, ev := range evs {
			p.applyRelayed(ws, ev, late)
		}
		if len(evs) < relayPage {
			return
		}
	}
}

// readsOf is the lane's read state. Lanes without waiters are forgotten
// as the table grows; one being read is never replaced while in use.
func (p *Platform) readsOf(sessionKey string) *laneReads {
	p.mu.Lock()
	defer p.mu.Unlock()
	lr, ok := p.pulls[sessionKey]
	if !ok {
		if len(p.pulls) >= 4*DefaultMaxConnections {
			p.forgetIdleReadsLocked()
		}
		lr = &laneReads{}
		p.pulls[sessionKey] = lr
	}
	return lr
}

func (p *Platform) forgetIdleReadsLocked() {
	busy := map[string]bool{}
	for _, ws := range p.waiters {
		for _, w := range ws {
			busy[w.key] = true
		}
	}
	for key, lr := range p.pulls {
		if !busy[key] && lr.mu.TryLock() {
			delete(p.pulls, key)
			lr.mu.Unlock()
		}
	}
}

// applyRelayed gives event ev to the waiters that have not seen it; late
// ones get their own message's events only.
func (p *Platform) applyRelayed(ws []*waiter, ev RelayEvent, late map[*waiter]bool) {
	for _, w := range ws {
		if !w.advance(ev.ID) {
			continue
		}
		switch ev.Kind {
		case relayPreview:
			if !w.replay && w.message == ev.MessageID {
				w.setPreview(string(ev.Body))
			}
		case relayProgress:
			if !w.replay && w.message == ev.MessageID {
				var v gateway.WorkView
				if json.Unmarshal(ev.Body, &v) == nil {
					w.setProgress(&v)
				}
			}
		case relayNotice:
			if !late[w] {
				p.relayedNotice(w, ev.Body)
			}
		}
	}
}

// relayedNotice attaches a notice another node streamed to a request, as
// shareNoteLocked does with this node's own.
func (p *Platform) relayedNotice(w *waiter, body []byte) {
	if w.replay {
		return
	}
	var n relayNote
	if err := json.Unmarshal(body, &n); err != nil {
		p.log.Warn("api.relay_decode_failed", zap.Error(err))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.waiters[w.message], w) {
		return // it left: nobody would report the row
	}
	if n.Row != 0 && w.hasNoteText(n.Text) {
		// The owner sends a question or approval directly (with its
		// structure), and when no request of its own takes it, once more
		// through the outbox (text only): one notice, whose row this
		// request now carries and reports.
		p.carryLocked(w, n.Row)
		return
	}
	if p.carryLocked(w, n.Row) {
		w.addNotice(note{row: n.Row, text: n.Text}, n.Approval, n.Question)
	}
}

// withRelayed is the recorded answer body another node wrote, given what
// this node's request was shown meanwhile (the owner had no request to
// put in it): its notices, approvals, questions and work view.
func withRelayed(body []byte, w *waiter) []byte {
	if w == nil || w.replay {
		return body
	}
	var resp Response
	if json.Unmarshal(body, &resp) != nil {
		return body
	}
	mine := responseFor(gateway.Outbound{InReplyTo: resp.ID}, w)
	if len(mine.Notices)+len(mine.Approvals)+len(mine.Questions) == 0 && mine.Progress == nil {
		return body
	}
	resp.Notices = append(slices.Clone(mine.Notices), resp.Notices...)
	resp.Approvals = append(slices.Clone(mine.Approvals), resp.Approvals...)
	resp.Questions = append(slices.Clone(mine.Questions), resp.Questions...)
	if resp.Progress == nil {
		resp.Progress, resp.Summary = mine.Progress, mine.Summary
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return body
	}
	return out
}
