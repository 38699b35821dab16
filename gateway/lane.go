package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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
	queue    fifo       // waiting messages
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
	// audioTold: the lane was told that audio is not transcribed.
	audioTold bool
	// typedAt is when typing was shown for the item about to run while it
	// waited for its slot (zero: it did not wait). Only the lane's worker
	// goroutine touches it.
	typedAt time.Time

	// intakeMu serialises the lane's deliveries from recording to queueing
	// when the store can journal a turn with its inbound row (turnInbound).
	// Without it a message recorded after another's check that the lane is
	// idle, but queued before it, would run first and its journal entry
	// would replace the other's, which would then run without one. intake
	// counts the deliveries holding it (guarded by mu): a lane with one is
	// not idle, so it is not forgotten under them.
	intakeMu sync.Mutex
	intake   int

	prev, next *lane // LRU links, guarded by laneTable.mu
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
	retry     bool   // reruns the lane's cut-off turn (journaled until it runs)
	// images are the message's image files (text already names every
	// file), handed to codex as localImage items.
	images []string
	// journal is the lane's journal entry written with the inbound row
	// (turnInbound); the turn then writes none of its own while the lane
	// is still at its generation and thread.
	journal *store.JournalEntry
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
	// retry: the item reruns the lane's cut-off turn, whose journal entry
	// stays until this turn journals itself.
	retry bool
	// compacting: the thread's active codex turn is a compaction run
	// before this turn; nothing may be steered into it or interrupt it.
	compacting bool
	// dir is the turn's working directory, where send_file resolves
	// relative paths; files are the files the agent sent (sendfile.go),
	// committed with the turn. Both guarded by lane.mu.
	dir   string
	files []store.OutboxMessage
	// stream is the turn's streamer, held once the agent sent a file.
	stream *streamer
}

// idle reports whether the lane has no work; l.mu must be held.
func (l *lane) idle() bool { return !l.worker && l.queue.len() == 0 && l.cur == nil && l.intake == 0 }

// tellAudioOnce reports whether the lane is yet to be told that audio is
// not transcribed, and marks it told.
func (l *lane) tellAudioOnce() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	told := l.audioTold
	l.audioTold = true
	return !told
}

// laneFor returns the lane for addr, creating its in-memory state.
func (g *Gateway) laneFor(addr Address) *lane { return g.lanes.get(addr) }

// forget drops a lane's in-memory state when it has nothing left.
func (g *Gateway) forget(l *lane) { g.lanes.forget(l) }

// Deliver records an inbound message and queues it on its lane. It returns
// once the message is durably recorded or recognised as a duplicate.
func (g *Gateway) Deliver(ctx context.Context, in Inbound) error {
	_, err := g.DeliverChecked(ctx, in)
	return err
}

// DeliverChecked is Deliver that also reports a duplicate message (one
// already recorded; it is answered once, by its first delivery).
func (g *Gateway) DeliverChecked(ctx context.Context, in Inbound) (bool, error) {
	if g.sched.stopping.Load() {
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
		g.host.routeCallback(ctx, in, g.log)
		return false, nil
	}
	if in.Text == "" && len(in.Attachments) == 0 {
		g.log.Info("inbound.empty_ignored", zap.String("platform", in.Address.Platform))
		return false, nil
	}
	if in.ReceivedAt.IsZero() {
		in.ReceivedAt = g.now()
	}
	key := in.Address.SessionKey()
	// The files are part of accepting the message: stored before its row
	// is, so an adapter acknowledging the message after Deliver has them
	// on disk, and the row lists them for a restart.
	saved, notices := g.storeAttachments(ctx, in)
	title := g.titled.of(key, in)
	rec := store.Inbound{
		Platform: in.Address.Platform, MessageID: in.MessageID, SessionKey: key,
		SenderID: in.SenderID, SenderName: in.SenderName, Text: in.Text, ReceivedAt: in.ReceivedAt,
		Attachments: saved, Lane: laneKey(in.Address), LaneTitle: title,
	}
	id, dup, journal, release, err := g.record(ctx, in.Address, rec)
	defer release()
	if err != nil {
		discardAttachments(in, saved)
		return false, fmt.Errorf("gateway: record inbound: %w", err)
	}
	g.titled.recorded(key, title)
	if dup {
		discardAttachments(in, saved)
		g.obs.Duplicate(in.Address.Platform)
		g.log.Info("inbound.duplicate", zap.String("lane", key), zap.String("message", in.MessageID))
		return true, nil
	}
	g.obs.Inbound(in.Address.Platform)
	// Recorded: from here on the work must not depend on the adapter's
	// context (an HTTP client may hang up).
	for _, n := range notices {
		g.out.notify(g.baseCtx, in.Address, in.MessageID, n)
	}
	if in.Text == "" && len(saved) == 0 { // every file refused: nothing to run
		g.inbox.set(g.baseCtx, id, store.InboundIgnored)
		return false, nil
	}
	if g.gate != nil { // the lane's owner, maybe another node, claims it
		g.gate.Recorded(key)
		return false, nil
	}
	g.dispatchJournaled(g.baseCtx, in.Address, id, in.MessageID, in.Text, saved, journal)
	return false, nil
}

// record commits the inbound row, ensuring its lane row in the same
// commit, and on an idle lane its turn's journal entry too (turnInbound):
// one commit per message. Then the lane's intake lock is held until
// release, which the caller calls once the message is queued. In cluster
// mode the lane's owner, maybe another node, journals the turn.
func (g *Gateway) record(ctx context.Context, addr Address, rec store.Inbound) (
	id int64, dup bool, journal *store.JournalEntry, release func(), err error) {
	ti, ok := g.st.(turnInbound)
	if !ok || g.gate != nil {
		id, dup, err = g.st.RecordInbound(ctx, rec)
		return id, dup, nil, func() {}, err
	}
	l := g.enterIntake(addr)
	release = func() { g.leaveIntake(l) }
	if !runsAsTurn(rec.Text, rec.Attachments) || !g.idleForTurn(l) {
		id, dup, err = g.st.RecordInbound(ctx, rec)
		return id, dup, nil, release, err
	}
	id, dup, journal, err = ti.RecordInboundTurn(ctx, rec, withFiles(rec.Text, rec.Attachments))
	return id, dup, journal, release, err
}

// turnInbound is the store's RecordInboundTurn: the inbound row and the
// turn's journal entry in one commit.
type turnInbound interface {
	RecordInboundTurn(ctx context.Context, in store.Inbound, text string) (id int64, duplicate bool, entry *store.JournalEntry, err error)
}

// runsAsTurn says whether a message will be a turn (not a command, not
// empty), as dispatch decides.
func runsAsTurn(text string, att []store.Attachment) bool {
	if len(att) > 0 {
		return true
	}
	if text == "" {
		return false
	}
	_, isCommand := parseCommand(text)
	return !isCommand
}

// enterIntake takes the lane's intake lock (see lane.intakeMu).
func (g *Gateway) enterIntake(addr Address) *lane {
	for {
		l := g.laneFor(addr)
		l.intakeMu.Lock()
		l.mu.Lock()
		if !l.dead {
			l.intake++
			l.mu.Unlock()
			return l
		}
		l.mu.Unlock()
		l.intakeMu.Unlock()
	}
}

func (g *Gateway) leaveIntake(l *lane) {
	l.mu.Lock()
	l.intake--
	l.mu.Unlock()
	l.intakeMu.Unlock()
	g.forget(l) // a duplicate or refused message leaves nothing to keep
}

// idleForTurn says whether a message recorded now would start its turn at
// once: nothing running or queued on the lane, a turn slot free, no usage
// pause, no shutdown. Only then is its journal entry written with its
// inbound row; a turn that waits keeps the old order (journaled when it
// starts), so a restart runs it instead of telling it cut off.
func (g *Gateway) idleForTurn(l *lane) bool {
	if g.sched.stopping.Load() || !g.sched.slotFree() || g.usagePaused() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur == nil && l.queue.len() == 0 && !l.stale
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
func (g *Gateway) dispatch(ctx context.Context, addr Address, inboundID int64, msgID, text string, att []store.Attachment) {
	g.dispatchJournaled(ctx, addr, inboundID, msgID, text, att, nil)
}

// dispatchJournaled is dispatch of a message whose turn's journal entry
// was written with its inbound row (journal, nil if none).
func (g *Gateway) dispatchJournaled(ctx context.Context, addr Address, inboundID int64, msgID, text string,
	att []store.Attachment, journal *store.JournalEntry) {
	l := g.laneFor(addr)
	if len(att) == 0 {
		if cmd, ok := parseCommand(text); ok {
			g.log.Info("command", zap.String("lane", l.key), zap.String("command", cmd.name))
			g.host.runCommand(ctx, commandCall{lane: l, name: cmd.name, args: cmd.args, inboundID: inboundID, msgID: msgID},
				func(ctx context.Context, id int64) { g.inbox.set(ctx, id, store.InboundDone) })
			return
		}
	}
	if hasAudio(att) && l.tellAudioOnce() {
		g.out.notify(ctx, addr, msgID, audioNotice)
	}
	it := item{kind: itemTurn, inboundID: inboundID, msgID: msgID, text: withFiles(text, att), images: imagePaths(att),
		journal: journal}
	if g.busyInput(ctx, l, it) {
		return
	}
	g.sched.enqueue(ctx, l, it)
}

// discarded: the lane was reset while its item ran.
func (l *lane) discarded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur != nil && l.cur.discard
}

// cutOff: shutdown interrupted the lane's item; it stays journaled.
func (l *lane) cutOff() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur != nil && l.cur.cutOff
}

// setCurThread records the thread the lane's current item runs on.
func (l *lane) setCurThread(thread string) {
	l.mu.Lock()
	if l.cur != nil {
		l.cur.threadID = thread
	}
	l.mu.Unlock()
}
