package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatewayd/gatewayd/gateway/outbox"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// scheduler runs the lanes' queues: a worker goroutine per lane with work
// (none for an idle lane), at most MaxConcurrentTurns items running at once
// over all lanes, and the drain at shutdown. It owns a lane's queue and
// worker flags; what an item does is the turn runner's (process).
type scheduler struct {
	base      context.Context // the gateway's; outlives intake until drained
	lanes     *laneTable
	platforms map[string]Platform // for typing while an item waits for its slot
	cx        interface {
		Interrupt(ctx context.Context, threadID string) error
	}
	out          *outbox.Courier
	inbox        inbox
	journal      journal
	log          *zap.Logger
	obs          Observer
	now          func() time.Time
	queueLimit   int
	busyMode     string
	drainTimeout time.Duration

	// The steps a worker takes, set by New once the parts exist: process
	// runs one item; hold holds it back while usage is paused (reporting
	// true when it did); trimLive evicts threads beyond MaxLive.
	process  func(ctx context.Context, l *lane, it item)
	hold     func(l *lane, it item) bool
	trimLive func(ctx context.Context, keep *lane)
	// endFiles takes the files an item's agent sent once it ended (nil:
	// none are held).
	endFiles func(sent []store.OutboxMessage)

	sem      chan struct{} // MaxConcurrentTurns slots
	queued   atomic.Int64
	running  atomic.Int64
	active   atomic.Int64
	stopping atomic.Bool
	startMu  sync.Mutex // orders worker starts before drain's Wait
	workers  sync.WaitGroup
}

// slotFree reports whether an item could take a turn slot now.
func (s *scheduler) slotFree() bool { return len(s.sem) < cap(s.sem) }

// enqueue appends work to the lane's queue, starting its worker if none
// runs. A full queue refuses the message with a notice; the inbox row is
// marked ignored so restart recovery does not run it later.
func (s *scheduler) enqueue(ctx context.Context, l *lane, it item) {
	s.admit(ctx, l, it)
}

// enqueueRetry is enqueue for a rerun of the lane's turn to retry. It
// reports false, having queued nothing, when a rerun already waits in the
// lane's queue or runs (two /retry in a row run it once).
func (s *scheduler) enqueueRetry(ctx context.Context, l *lane, it item) bool {
	it.retry = true
	return !s.admit(ctx, l, it).duplicate
}

// admit is enqueue, reporting what the lane did with the item.
func (s *scheduler) admit(ctx context.Context, l *lane, it item) admission {
	a := l.admit(it, s.queueLimit, &s.queued, s.startWorker)
	for a.dead { // forgotten between lanes.get and here: use its successor
		l = s.lanes.get(l.addr)
		a = l.admit(it, s.queueLimit, &s.queued, s.startWorker)
	}
	if a.duplicate {
		return a
	}
	if a.full {
		s.inbox.set(ctx, it.inboundID, store.InboundIgnored)
		s.out.Notify(ctx, l.addr, replyTarget(it), fmt.Sprintf(
			"Too many messages are waiting here (limit %d); this one was not queued. Send it again when the current reply is done.",
			s.queueLimit))
		return a
	}
	// No worker when shutdown began: the message stays received in the
	// inbox and the next start runs it, unless a journal entry says it was
	// cut off.
	if a.orphan {
		s.journal.clear(ctx, l.key)
	}
	if a.tell {
		s.out.Notify(ctx, l.addr, "", s.queuedNotice())
	}
	return a
}

// startWorker starts the lane's worker unless shutdown began (the item then
// stays in the inbox as received and runs after the restart). l.mu is held.
func (s *scheduler) startWorker(l *lane) {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.stopping.Load() {
		return
	}
	l.worker = true
	s.active.Add(1)
	s.workers.Add(1)
	go s.work(l)
}

func replyTarget(it item) string {
	if it.cmdID != "" {
		return it.cmdID
	}
	return it.msgID
}

// work processes the lane's queue in order, one item at a time, holding a
// global turn slot while an item runs. It exits when the queue is empty.
func (s *scheduler) work(l *lane) {
	defer s.workers.Done()
	for {
		it, ok := s.next(l)
		if !ok {
			// Eviction skipped this lane while it was busy; and a lane with
			// no thread and no work needs no memory.
			s.trimLive(s.base, nil)
			s.lanes.forget(l)
			return
		}
		if s.hold(l, it) {
			return // resumed when the usage limit resets
		}
		if !s.takeSlot(l, it) { // only after drain set stopping: next retires
			s.journal.dropUnstarted(s.base, l, it)
			s.finishItem(l)
			continue
		}
		if s.stopping.Load() {
			// Shutdown began while this waited for a slot: leave it in
			// the inbox (state received); the next start runs it.
			s.journal.dropUnstarted(s.base, l, it)
			<-s.sem
			s.finishItem(l)
			continue
		}
		s.running.Add(1)
		s.process(s.base, l, it)
		s.running.Add(-1)
		<-s.sem
		s.finishItem(l)
	}
}

// takeSlot waits for one of the max_concurrent_turns slots. A turn that
// has to wait shows typing at once, so a burst beyond the limit sees that
// its messages arrived; the turn's own streamer refreshes it a
// TypingInterval later (at once if the wait was longer).
// Typing is not refreshed while waiting: with hundreds of lanes waiting
// that would be a Bot API call per lane every few seconds (a 1,000-chat
// burst made ~9 per message). It reports false when the gateway's base
// context ends first.
func (s *scheduler) takeSlot(l *lane, it item) bool {
	l.typedAt = time.Time{}
	select {
	case s.sem <- struct{}{}:
		return true
	default:
	}
	if s.typeOnce(l.addr, it) {
		l.typedAt = s.now()
	}
	select {
	case s.sem <- struct{}{}:
		return true
	case <-s.base.Done():
		return false
	}
}

// typingTimeout bounds the one typing call of a waiting turn.
const typingTimeout = 10 * time.Second

// typeOnce shows typing for a turn that waits for its slot, without making
// the worker wait for the platform; it reports whether it did.
func (s *scheduler) typeOnce(addr Address, it item) bool {
	ty, ok := s.platforms[addr.Platform].(Typer)
	if !ok || it.kind != itemTurn {
		return false
	}
	s.workers.Add(1) // from a worker, which is counted: shutdown waits for this too
	go func() {
		defer s.workers.Done()
		ctx, cancel := context.WithTimeout(s.base, typingTimeout)
		defer cancel()
		if err := ty.Typing(ctx, addr); err != nil && ctx.Err() == nil {
			s.obs.PlatformError(addr.Platform, "typing")
			s.log.Debug("typing.failed", zap.String("platform", addr.Platform), zap.Error(err))
		}
	}()
	return true
}

// next pops the lane's next item and marks it current, or retires the
// worker when the queue is empty or the gateway is stopping.
func (s *scheduler) next(l *lane) (item, bool) {
	return l.take(s.stopping.Load, &s.queued, &s.active)
}

// finishItem ends the lane's item and hands the files its agent sent to
// endFiles: the turn, committed or not, is done with them.
func (s *scheduler) finishItem(l *lane) {
	sent := l.endItem(s.now().UnixNano())
	if s.endFiles != nil {
		s.endFiles(sent)
	}
}

// park puts the item a worker was about to start back at the head of the
// lane's queue and retires the worker, if wait says so; it reports whether
// it did. wait runs under the lane's lock, so a resume, which takes it
// too, sees either the worker running or the item parked. A parked item
// waits, maybe for hours: its inbound journal entry goes, and it is
// journaled when it starts, so a restart meanwhile runs it instead of
// telling it cut off. Its lane's burst counts as told.
func (s *scheduler) park(l *lane, it item, wait func() bool) bool {
	parked := l.park(it, wait, &s.queued, &s.active)
	if parked {
		s.journal.dropUnstarted(s.base, l, it)
	}
	return parked
}

// resume restarts the worker of a parked lane that still has work.
func (s *scheduler) resume(l *lane) {
	l.restartWorker(s.startWorker)
}

// requeue puts items back at the head of the lane's queue for its running
// worker to take next; it starts none.
func (s *scheduler) requeue(l *lane, items []item) {
	l.prepend(items, &s.queued, nil)
}

// draining reports whether shutdown began.
func (s *scheduler) draining() bool { return s.stopping.Load() }

// takeQueueLocked empties the lane's queue and returns what it held; l.mu
// is held.
func (s *scheduler) takeQueueLocked(l *lane) []item {
	taken := l.queue.TakeAll()
	s.queued.Add(-int64(len(taken)))
	return taken
}

// requeueFront puts taken items back at the head of the lane's queue (an
// operation that took them failed), starting a worker if none runs.
func (s *scheduler) requeueFront(l *lane, taken []item) {
	if len(taken) == 0 {
		return
	}
	l.prepend(taken, &s.queued, s.startWorker)
}

func (s *scheduler) queuedNotice() string {
	if s.busyMode == BusyInterrupt {
		return interruptedNotice
	}
	return queuedNotice
}

// drain stops intake, lets running turns finish for DrainTimeout, then
// interrupts what still runs and waits for the workers to return.
func (s *scheduler) drain(ctx context.Context) {
	s.startMu.Lock()
	s.stopping.Store(true)
	s.startMu.Unlock()
	done := make(chan struct{})
	go func() { s.workers.Wait(); close(done) }()
	timer := time.NewTimer(s.drainTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	}
	s.log.Warn("shutdown.interrupting", zap.Int64("running", s.running.Load()))
	var threads []string
	s.lanes.each(func(l *lane) {
		if th := l.cutOffItem(); th != "" {
			threads = append(threads, th)
		}
	})
	// Interrupts go out together, so the whole step takes at most
	// DrainInterruptTimeout however many turns run (the unit's stop
	// timeout counts on it).
	ictx, cancel := context.WithTimeout(ctx, config.DrainInterruptTimeout)
	var sent sync.WaitGroup
	for _, th := range threads {
		sent.Go(func() {
			if err := s.cx.Interrupt(ictx, th); err != nil && !errors.Is(err, codex.ErrNoActiveTurn) {
				s.log.Warn("shutdown.interrupt_failed", zap.String("thread", th), zap.Error(err))
			}
		})
	}
	sent.Wait()
	cancel()
	select {
	case <-done:
	case <-time.After(config.DrainInterruptedWait):
		s.log.Error("shutdown.turns_still_running")
	}
}
