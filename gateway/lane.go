package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// lane is the in-memory state of one conversation. It is kept small (a few
// hundred bytes) because thousands may be live: no goroutine runs for an idle
// lane; a worker starts when the queue becomes non-empty and exits when it
// drains.
type lane struct {
	key  string
	addr Address

	// opMu serialises loading and releasing the lane's thread in the
	// app-server (the worker's ensure step against eviction's Release).
	opMu sync.Mutex

	mu       sync.Mutex
	queue    []item     // waiting messages, FIFO
	worker   bool       // a worker goroutine owns the queue
	cur      *turnState // the item being processed, nil between items
	thread   string     // thread loaded in the app-server; "" when not live
	stale    bool       // thread belongs to a reset generation: release it
	notified bool       // "queued" notice sent for the current burst
	dead     bool       // dropped from Gateway.lanes; a new lane object replaces it
	lastUsed int64      // unix nanos of the last turn, for idle eviction
	// compactHold counts turns that must still run before an automatic
	// compaction may be tried again (the cooldown).
	compactHold int

	prev, next *lane // LRU links, guarded by Gateway.mu
	inLRU      bool
}

type itemKind uint8

const (
	itemTurn    itemKind = iota // run Text as a turn
	itemCompact                 // compact the lane's thread
)

// item is one queued unit of work.
type item struct {
	kind      itemKind
	inboundID int64
	msgID     string // platform message id of the inbound ("" for retries after restart)
	text      string
	cmdID     string // message id of the command that queued it, for the reply
}

// turnState is the item being processed; commands use it to stop the turn.
type turnState struct {
	kind     itemKind
	threadID string
	// superseded: busy mode interrupt asked this turn to stop; a turn not
	// yet started is not started, one starting is interrupted at once.
	superseded bool
	// steer holds the messages steered into this turn (busy mode steer).
	steer    steerLog
	discard  bool // the lane was reset: skip or discard the result
	cutOff   bool // shutdown interrupted it: leave it journaled
	answered bool // the answer is being committed; nothing waits for it
	// compacting: the thread's active codex turn is a compaction run
	// before this turn; nothing may be steered into it or interrupt it.
	compacting bool
}

// idle reports whether the lane has no work; l.mu must be held.
func (l *lane) idle() bool { return !l.worker && len(l.queue) == 0 && l.cur == nil }

// lruList is an intrusive doubly linked list of live lanes.
type lruList struct {
	head, tail *lane
	n          int
}

func (q *lruList) remove(l *lane) {
	if !l.inLRU {
		return
	}
	if l.prev != nil {
		l.prev.next = l.next
	} else {
		q.head = l.next
	}
	if l.next != nil {
		l.next.prev = l.prev
	} else {
		q.tail = l.prev
	}
	l.prev, l.next, l.inLRU = nil, nil, false
	q.n--
}

func (q *lruList) pushFront(l *lane) {
	q.remove(l)
	l.next = q.head
	if q.head != nil {
		q.head.prev = l
	}
	q.head = l
	if q.tail == nil {
		q.tail = l
	}
	l.inLRU = true
	q.n++
}

// laneFor returns the lane for addr, creating its in-memory state.
func (g *Gateway) laneFor(addr Address) *lane {
	key := addr.SessionKey()
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.lanes[key]
	if l == nil {
		l = &lane{key: key, addr: addr}
		g.lanes[key] = l
	}
	return l
}

// forget drops a lane's in-memory state when it has nothing left: no work
// and no loaded thread.
func (g *Gateway) forget(l *lane) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle() && l.thread == "" && !l.inLRU && g.lanes[l.key] == l {
		delete(g.lanes, l.key)
		l.dead = true
	}
}

// Deliver records an inbound message and queues it on its lane. It returns
// once the message is durably recorded or recognised as a duplicate.
func (g *Gateway) Deliver(ctx context.Context, in Inbound) error {
	_, err := g.DeliverChecked(ctx, in)
	return err
}

// DeliverChecked is Deliver that also reports a duplicate message (one
// already recorded; it is answered once, by its first delivery).
func (g *Gateway) DeliverChecked(ctx context.Context, in Inbound) (bool, error) {
	if g.stopping.Load() {
		return false, ErrShuttingDown
	}
	if err := in.Address.Validate(); err != nil {
		return false, err
	}
	if in.MessageID == "" {
		return false, errors.New("gateway: inbound has no message id")
	}
	if !g.authorized(in) {
		g.log.Info("inbound.unauthorized", zap.String("platform", in.Address.Platform),
			zap.String("sender", in.SenderID))
		g.obs.PlatformError(in.Address.Platform, "unauthorized")
		return false, nil
	}
	if in.Callback != "" && in.Text == "" {
		g.callback(ctx, in)
		return false, nil
	}
	if in.Text == "" {
		g.log.Info("inbound.empty_ignored", zap.String("platform", in.Address.Platform))
		return false, nil
	}
	if in.ReceivedAt.IsZero() {
		in.ReceivedAt = g.now()
	}
	key := in.Address.SessionKey()
	if _, err := g.st.EnsureLane(ctx, laneKey(in.Address)); err != nil {
		return false, fmt.Errorf("gateway: ensure lane: %w", err)
	}
	id, dup, err := g.st.RecordInbound(ctx, store.Inbound{
		Platform: in.Address.Platform, MessageID: in.MessageID, SessionKey: key,
		SenderID: in.SenderID, SenderName: in.SenderName, Text: in.Text, ReceivedAt: in.ReceivedAt,
	})
	if err != nil {
		return false, fmt.Errorf("gateway: record inbound: %w", err)
	}
	if dup {
		g.obs.Duplicate(in.Address.Platform)
		g.log.Info("inbound.duplicate", zap.String("lane", key), zap.String("message", in.MessageID))
		return true, nil
	}
	g.obs.Inbound(in.Address.Platform)
	// Recorded: from here on the work must not depend on the adapter's
	// context (an HTTP client may hang up).
	g.dispatch(g.baseCtx, in.Address, id, in.MessageID, in.Text)
	return false, nil
}

func (g *Gateway) authorized(in Inbound) bool {
	p, ok := g.platforms[in.Address.Platform]
	if !ok {
		return true
	}
	a, ok := p.(Authorizer)
	return !ok || a.Authorize(in)
}

func laneKey(a Address) store.LaneKey {
	return store.LaneKey{SessionKey: a.SessionKey(), Platform: a.Platform, Kind: string(a.Kind),
		ChatID: a.ChatID, TopicID: a.TopicID, UserID: a.UserID}
}

// dispatch runs a recorded message: commands act at once or queue work;
// other text queues a turn.
func (g *Gateway) dispatch(ctx context.Context, addr Address, inboundID int64, msgID, text string) {
	l := g.laneFor(addr)
	if cmd, ok := parseCommand(text); ok {
		g.command(ctx, l, cmd, inboundID, msgID)
		return
	}
	it := item{kind: itemTurn, inboundID: inboundID, msgID: msgID, text: text}
	if g.busyInput(ctx, l, it) {
		return
	}
	g.enqueue(ctx, l, it)
}

// enqueue appends work to the lane's queue, starting its worker if none
// runs. A full queue refuses the message with a notice; the inbox row is
// marked ignored so restart recovery does not run it later.
func (g *Gateway) enqueue(ctx context.Context, l *lane, it item) {
	l.mu.Lock()
	for l.dead { // forgotten between laneFor and here: use its successor
		l.mu.Unlock()
		l = g.laneFor(l.addr)
		l.mu.Lock()
	}
	if len(l.queue) >= g.cfg.QueueLimit {
		l.mu.Unlock()
		g.setInbound(ctx, it.inboundID, store.InboundIgnored)
		g.notify(ctx, l.addr, replyTarget(it), fmt.Sprintf(
			"Too many messages are waiting here (limit %d); this one was not queued. Send it again when the current reply is done.",
			g.cfg.QueueLimit))
		return
	}
	// Tell the user once per burst when the message really waits: behind
	// queued messages or a turn that has not produced its answer yet.
	busy := len(l.queue) > 0 || (l.cur != nil && !l.cur.answered)
	l.queue = append(l.queue, it)
	g.queued.Add(1)
	tell := busy && !l.notified
	if tell {
		l.notified = true
	}
	if !l.worker {
		g.startWorker(l)
	}
	l.mu.Unlock()
	if tell {
		g.notify(ctx, l.addr, "", g.queuedNotice())
	}
}

// startWorker starts the lane's worker unless shutdown began (the item then
// stays in the inbox as received and runs after the restart). l.mu is held.
func (g *Gateway) startWorker(l *lane) {
	g.startMu.Lock()
	defer g.startMu.Unlock()
	if g.stopping.Load() {
		return
	}
	l.worker = true
	g.active.Add(1)
	g.workers.Add(1)
	go g.work(l)
}

func replyTarget(it item) string {
	if it.cmdID != "" {
		return it.cmdID
	}
	return it.msgID
}

// work processes the lane's queue in order, one item at a time, holding a
// global turn slot while an item runs. It exits when the queue is empty.
func (g *Gateway) work(l *lane) {
	defer g.workers.Done()
	for {
		it, ok := g.next(l)
		if !ok {
			// Eviction skipped this lane while it was busy; and a lane with
			// no thread and no work needs no memory.
			g.trimLive(g.baseCtx, nil)
			g.forget(l)
			return
		}
		select {
		case g.sem <- struct{}{}:
		case <-g.baseCtx.Done(): // only after drain set stopping: next retires
			g.finishItem(l)
			continue
		}
		if g.stopping.Load() {
			// Shutdown began while this waited for a slot: leave it in
			// the inbox (state received); the next start runs it.
			<-g.sem
			g.finishItem(l)
			continue
		}
		g.running.Add(1)
		g.process(g.baseCtx, l, it)
		g.running.Add(-1)
		<-g.sem
		g.finishItem(l)
	}
}

// next pops the lane's next item and marks it current, or retires the
// worker when the queue is empty or the gateway is stopping.
func (g *Gateway) next(l *lane) (item, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 || g.stopping.Load() {
		l.worker = false
		g.active.Add(-1)
		l.notified = false
		return item{}, false
	}
	it := l.queue[0]
	l.queue[0] = item{}
	l.queue = l.queue[1:]
	if len(l.queue) == 0 {
		l.queue = nil // let the backing array go
	}
	g.queued.Add(-1)
	if len(l.queue) == 0 {
		l.notified = false // the burst is drained; the next one is told again
	}
	l.cur = &turnState{kind: it.kind}
	return it, true
}

func (g *Gateway) finishItem(l *lane) {
	l.mu.Lock()
	l.cur = nil
	l.lastUsed = g.now().UnixNano()
	l.mu.Unlock()
}

// dropQueue empties the lane's queue (after /new) and marks the dropped
// messages ignored.
func (g *Gateway) dropQueue(ctx context.Context, l *lane) []item {
	l.mu.Lock()
	dropped := g.takeQueueLocked(l)
	l.mu.Unlock()
	g.ignoreItems(ctx, dropped)
	return dropped
}

// takeQueueLocked empties the lane's queue and returns what it held; l.mu
// is held.
func (g *Gateway) takeQueueLocked(l *lane) []item {
	taken := l.queue
	l.queue = nil
	g.queued.Add(-int64(len(taken)))
	return taken
}

// requeueFront puts taken items back at the head of the lane's queue (an
// operation that took them failed), starting a worker if none runs.
func (g *Gateway) requeueFront(l *lane, taken []item) {
	if len(taken) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queue = append(taken, l.queue...)
	g.queued.Add(int64(len(taken)))
	if !l.worker {
		g.startWorker(l)
	}
}

// ignoreItems marks dropped items' inbox rows ignored, so restart recovery
// does not run them.
func (g *Gateway) ignoreItems(ctx context.Context, items []item) {
	for _, it := range items {
		g.setInbound(ctx, it.inboundID, store.InboundIgnored)
	}
}

func (g *Gateway) setInbound(ctx context.Context, id int64, state string) {
	if id == 0 {
		return
	}
	if err := g.st.SetInboundState(ctx, id, state); err != nil {
		g.log.Error("inbound.state_failed", zap.Int64("inbound", id), zap.String("state", state), zap.Error(err))
	}
}
