package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatewayd/gatewayd/internal/fifo"
	"github.com/gatewayd/gatewayd/runtime/codex"
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
	queue    fifo.Queue[item] // waiting messages
	worker   bool             // a worker goroutine owns the queue
	cur      *turnState       // the item being processed, nil between items
	notified bool             // "queued" notice sent for the current burst
	dead     bool             // dropped from the lane table; a new lane object replaces it
	live     liveThread       // its thread in the app-server (guarded by mu)
	// audioTold: the lane was told that audio is not transcribed.
	audioTold bool
	// typedAt is when typing was shown for the item about to run while it
	// waited for its slot (zero: it did not wait). Only the lane's worker
	// goroutine touches it.
	typedAt time.Time

	// intakeMu serialises the lane's deliveries from recording to queueing
	// when its turn's journal entry may be written with its inbound row.
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

// newLane is the in-memory state of a lane with nothing in it yet.
func newLane(key string, addr Address) *lane {
	l := &lane{key: key, addr: addr}
	l.live.mu = &l.mu
	return l
}

type itemKind uint8

const (
	itemTurn itemKind = iota // run Text as a turn
	itemTask                 // run task: a command that acts on the lane's thread or files
)

// item is one queued unit of work.
type item struct {
	kind      itemKind
	inboundID int64
	msgID     string // platform message id of the inbound ("" for retries after restart)
	text      string
	cmdID     string // message id of the command that queued it, for the reply
	retry     bool   // reruns the lane's turn to retry (retry.go): one at a time
	// retries is the turn to retry it reruns, marked retried when the
	// rerun is committed (nil when it could not be read).
	retries *store.RetryTurn
	// images are the message's image files (text already names every
	// file), handed to codex as localImage items.
	images []string
	// audio are its voice notes and audio files, transcribed before the
	// turn when voice.transcribe_url is set (voice.go).
	audio []string
	// journal is the lane's journal entry written with the inbound row
	// (intake.record); the turn then writes none of its own while the lane
	// is still at its generation and thread.
	journal *store.JournalEntry
	// task runs an itemTask in the lane's order (it closes the inbound
	// row itself).
	task func(ctx context.Context, l *lane, it item)
	// review makes the turn codex's reviewer on this target (/review)
	// instead of a message.
	review *codex.ReviewTarget
	// requester is who sent the message (platform user id and shown
	// name): in a shared room only they, or an admin, decide what the
	// turn asks (codex.approvers). "" when not known (a rerun after a
	// restart): anyone allowed decides.
	requester, requesterName string
	// origin says what started a turn no one typed ("⏰ every day
	// 09:00", "🪝 github"); its reply starts with it.
	origin string
}

// tellAudioOnce reports whether the lane is yet to be told that audio is
// not transcribed, and marks it told.
func (l *lane) tellAudioOnce() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	told := l.audioTold
	l.audioTold = true
	return !told
}

// steerTarget returns the lane's current turn and its thread if a message
// can be steered into it: a turn (not a compaction) that has not produced its
// answer, was not reset, and with nothing queued ahead of the message.
func (l *lane) steerTarget() (*turnState, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.cur
	if cur == nil || cur.kind != itemTurn || cur.answered || cur.discard || cur.cutOff ||
		cur.compacting || cur.threadID == "" || l.queue.Len() > 0 {
		return nil, ""
	}
	return cur, cur.threadID
}

// supersede marks the lane's running turn superseded (busy mode interrupt)
// and returns the thread to interrupt: "" while a compaction runs before the
// turn, which is let finish (the turn then does not start). ok is false when
// no turn that could still answer is running.
func (l *lane) supersede() (thread string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.cur
	if cur == nil || cur.kind != itemTurn || cur.answered {
		return "", false
	}
	cur.superseded = true
	if cur.compacting {
		return "", true
	}
	return cur.threadID, true
}

// curDir returns the current turn (nil between items) and its working
// directory.
func (l *lane) curDir() (*turnState, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		return nil, ""
	}
	return l.cur, l.cur.dir
}

// takeIdleThread detaches the lane's loaded thread, for eviction, and
// returns it; "" (nothing detached) when the lane has work or no thread.
func (l *lane) takeIdleThread() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.snapshotLocked().idle() || l.live.thread == "" {
		return ""
	}
	return l.live.detachLocked()
}

// detachThread detaches the lane's loaded thread, whatever generation it
// belongs to, so the lane's next turn loads its thread again, and returns
// it ("" when none was loaded). busy: an item of the lane's own runs (not
// one a step-down discarded), and nothing was detached.
func (l *lane) detachThread() (thread string, busy bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil && !l.cur.discard {
		return "", true
	}
	return l.live.detachLocked(), false
}

// discardWork discards the lane's running item, marks its loaded thread
// stale and empties its queue through takeQueue (the scheduler's, which
// keeps its count), all in one section so no message slips between: a reset
// (/new) and a step-down both begin so. It returns the discarded item's
// thread to interrupt ("" when none ran), the dropped items, and undo,
// which restores the discard and stale marks when a reset could not be
// stored (the caller requeues dropped).
func (l *lane) discardWork(takeQueue func(*lane) []item) (running string, dropped []item, undo func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, wasStale := l.cur, l.live.stale
	if cur != nil {
		cur.discard = true
		running = cur.threadID
	}
	l.live.retireLocked()
	dropped = takeQueue(l)
	undo = func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if cur != nil && l.cur == cur {
			cur.discard = false
		}
		l.live.stale = wasStale
	}
	return running, dropped, undo
}

// enterIntake takes the lane's intake lock and counts the delivery holding
// it, so the lane is not idle under it. It reports false, holding nothing,
// when the lane was dropped from the table (dead).
func (l *lane) enterIntake() bool {
	l.intakeMu.Lock()
	l.mu.Lock()
	if !l.dead {
		l.intake++
		l.mu.Unlock()
		return true
	}
	l.mu.Unlock()
	l.intakeMu.Unlock()
	return false
}

// leaveIntake undoes enterIntake.
func (l *lane) leaveIntake() {
	l.mu.Lock()
	l.intake--
	l.mu.Unlock()
	l.intakeMu.Unlock()
}

// current is the item being processed; nil between items.
func (l *lane) current() *turnState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur
}

// requesterOf is who sent the item that runs on thread, if one does.
func (l *lane) requesterOf(thread string) (id, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil || l.cur.threadID != thread {
		return "", ""
	}
	return l.cur.requester, l.cur.requesterName
}

// waitPing is who to ping, and which of their messages to answer, when
// the turn on thread starts waiting for them: the requester, the first
// time only. ok is false when there is nobody to ping or they were.
func (l *lane) waitPing(thread string) (user, msgID string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil || l.cur.threadID != thread || l.cur.requester == "" || l.cur.waitPinged {
		return "", "", false
	}
	l.cur.waitPinged = true
	return l.cur.requester, l.cur.msgID, true
}

// endItem clears the lane's current item, the lane last used at usedAt
// (unix nanos), for idle eviction, and returns the files its agent sent:
// in the same section, so none is added after (addSentFile checks cur).
func (l *lane) endItem(usedAt int64) []store.OutboxMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sent []store.OutboxMessage
	if l.cur != nil {
		sent = l.cur.files
		l.cur.edits.release()
	}
	l.cur = nil
	l.live.lastUsed = usedAt
	return sent
}

// cutOffItem marks the lane's running item cut off by shutdown (it stays
// journaled) and returns its thread to interrupt; "" when none.
func (l *lane) cutOffItem() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		return ""
	}
	l.cur.cutOff = true
	return l.cur.threadID
}

// restartWorker starts the worker of a parked lane that still has work,
// through start (the scheduler's), which runs under the lane's lock so a
// park and a resume see each other.
func (l *lane) restartWorker(start func(*lane)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.dead && !l.worker && l.queue.Len() > 0 {
		start(l)
	}
}

// prepend puts items back at the head of the lane's queue, counting them in
// queued (the scheduler's count) in the same section. With start non-nil it
// starts a worker, under the lane's lock, when none runs.
func (l *lane) prepend(items []item, queued *atomic.Int64, start func(*lane)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queue.Prepend(items)
	queued.Add(int64(len(items)))
	if start != nil && !l.worker {
		start(l)
	}
}

// runsThread reports whether threadID is the lane's loaded thread or the
// thread its current item runs on. Called under laneTable.mu (lock order).
func (l *lane) runsThread(threadID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live.thread == threadID || (l.cur != nil && l.cur.threadID == threadID)
}

// admission is what admit did with an item.
type admission struct {
	dead      bool // the lane was forgotten: admit to its successor instead
	duplicate bool // a rerun of the turn to retry, while one runs or waits: not queued
	full      bool // the queue is at its limit: the item was not queued
	tell      bool // the item waits behind others: tell the lane once per burst
	orphan    bool // queued after shutdown began, with no worker to run it
}

// admit appends it to the lane's queue unless the queue holds limit items
// or it is a second rerun of the turn to retry, counting it in queued and
// starting a worker through start when none runs, all in the lane's
// section. The lane's burst is told once: the
// first item that really waits (behind queued items or a turn that has not
// answered yet) reports tell.
func (l *lane) admit(it item, limit int, queued *atomic.Int64, start func(*lane)) admission {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead {
		return admission{dead: true}
	}
	// A second rerun of the turn to retry, while one runs or waits.
	if it.retry && (l.cur != nil && l.cur.retry || l.queue.Has(func(it item) bool { return it.retry })) {
		return admission{duplicate: true}
	}
	if l.queue.Len() >= limit {
		return admission{full: true}
	}
	busy := l.queue.Len() > 0 || (l.cur != nil && !l.cur.answered)
	l.queue.Push(it)
	queued.Add(1)
	tell := busy && !l.notified
	if tell {
		l.notified = true
	}
	if !l.worker {
		start(l)
	}
	return admission{tell: tell, orphan: !l.worker && it.journal != nil}
}

// take pops the lane's next item and makes it current, or retires the
// lane's worker when the queue is empty or stopping says shutdown began;
// queued and active are the scheduler's counts, kept in the same section.
func (l *lane) take(stopping func() bool, queued, active *atomic.Int64) (item, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.queue.Len() == 0 || stopping() {
		l.worker = false
		active.Add(-1)
		l.notified = false
		return item{}, false
	}
	it, _ := l.queue.Pop()
	queued.Add(-1)
	if l.queue.Len() == 0 {
		l.notified = false // the burst is drained; the next one is told again
	}
	l.cur = &turnState{lane: l, kind: it.kind, retry: it.retry, requester: it.requester, requesterName: it.requesterName, msgID: it.msgID,
		edits: newTurnEdits(it)}
	return it, true
}

// park puts it, the item the lane's worker was about to start, back at the
// head of the queue without its journal entry and retires the worker, if
// wait (called in the lane's section) says so; it reports whether it did.
// The lane's burst counts as told.
func (l *lane) park(it item, wait func() bool, queued, active *atomic.Int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !wait() {
		return false
	}
	if l.cur != nil && l.cur.edits.text != "" {
		it.text = l.cur.edits.text // edited after it was taken: it waits as edited
	}
	it.journal = nil
	l.queue.Prepend([]item{it})
	queued.Add(1)
	l.cur = nil
	l.worker = false
	l.notified = true
	active.Add(-1)
	return true
}

// dieIfEmpty marks the lane dead when it has no work and no loaded thread,
// and reports whether it did. The lane table calls it under its own lock,
// so the mark and the lane's removal from the table are one step.
func (l *lane) dieIfEmpty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.snapshotLocked().idle() || l.live.thread != "" {
		return false
	}
	l.dead = true
	return true
}
