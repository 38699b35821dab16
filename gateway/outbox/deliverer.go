// Package outbox delivers what the gateway says. Everything goes through
// the store's outbox, so a reply survives a platform outage or a restart:
// the Deliverer sends due rows in order, marks them sent, retries with
// backoff (or when the platform asks), holds rows a platform deferred, and
// gives up only on a permanent failure or after maxAttempts. It knows rows
// and platform names, nothing of lanes or turns; the platforms themselves
// are reached through the Transport the core gives it.
package outbox

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/internal/backoff"
	"github.com/gatewayd/gatewayd/store"
)

// Batch is how many due rows one read of the outbox takes.
const Batch = 50

const (
	maxAttempts = 12
	backoffBase = 2 * time.Second
	backoffMax  = 5 * time.Minute
	// SendTimeout bounds one send to a platform.
	SendTimeout   = 30 * time.Second
	flushDeadline = 10 * time.Second
)

// Store is the part of the store the deliverer uses.
type Store interface {
	Enqueue(ctx context.Context, m store.OutboxMessage) (int64, error)
	DueOutbox(ctx context.Context, now time.Time, limit int) ([]store.OutboxMessage, error)
	MarkSent(ctx context.Context, id int64, platformMessageID string) error
	MarkRetry(ctx context.Context, id int64, next time.Time, errText string) error
	MarkFailed(ctx context.Context, id int64, errText string) error
	RecordPart(ctx context.Context, id int64, part int, platformMessageID string) error
	MarkSentWithPart(ctx context.Context, id int64, part int, platformMessageID string) error
	HoldOutbox(ctx context.Context, id int64) error
	UnholdLane(ctx context.Context, sessionKey string) (int, error)
	UnholdAll(ctx context.Context) (int, error)
	// DueOutboxFor is DueOutbox restricted to some lanes.
	DueOutboxFor(ctx context.Context, now time.Time, sessionKeys []string, limit int) ([]store.OutboxMessage, error)
}

// Transport is how rows reach their platforms. The core implements it: it
// alone knows the platforms and the message they take.
type Transport interface {
	// SendRow delivers one row through its platform and returns the id
	// of the platform's (last) message; parts records the row's parts.
	// A row for a platform that does not run here is a *NoPlatformError.
	SendRow(ctx context.Context, m store.OutboxMessage, parts *Parts) (string, error)
	// SendDirect is the last resort when the outbox cannot be written:
	// one attempt straight to the platform, logged if it fails.
	SendDirect(ctx context.Context, addr chat.Address, inReplyTo, editID, text string)
}

// Observer counts sends (the gateway's Observer implements it).
type Observer interface {
	Outbound(platform string, err error)
}

// Deliverer sends the outbox: due rows in lane order, each platform in
// parallel, retries with backoff or when the platform says, and rows a
// platform deferred held until it asks for them again.
type Deliverer struct {
	st    Store
	tr    Transport
	log   *zap.Logger
	obs   Observer
	now   func() time.Time
	files *files.Store // where file rows wait; nil: no files are sent

	wake     chan struct{} // rows were added (capacity 1)
	holdMu   sync.Mutex
	hold     map[string]time.Time // lanes whose rows wait for an earlier row's retry
	deferred *deferrals           // rows platforms took but nobody received yet
	// serves, in cluster mode, says which lanes' rows this node delivers.
	serves func(sessionKey string) bool
	// owned, in cluster mode, lists the lanes this node owns: only their
	// rows are read.
	owned func() []string
}

// New is a deliverer of st's rows through tr. fs keeps the files of file
// rows until they are delivered; nil sends no files.
func New(st Store, tr Transport, fs *files.Store, log *zap.Logger, obs Observer, now func() time.Time) *Deliverer {
	return &Deliverer{st: st, tr: tr, files: fs, log: log, obs: obs, now: now,
		wake: make(chan struct{}, 1), hold: make(map[string]time.Time), deferred: &deferrals{}}
}

// SetLaneGate puts the deliverer in cluster mode: it reads only the rows
// of the lanes owned returns, and sends only those serves accepts.
func (d *Deliverer) SetLaneGate(serves func(sessionKey string) bool, owned func() []string) {
	d.serves, d.owned = serves, owned
}

// due reads the next batch of due rows: the owned lanes' in cluster mode,
// so other nodes' rows never fill the batch, else every lane's.
func (d *Deliverer) due(ctx context.Context) ([]store.OutboxMessage, error) {
	if d.owned != nil {
		return d.st.DueOutboxFor(ctx, d.now(), d.owned(), Batch)
	}
	return d.st.DueOutbox(ctx, d.now(), Batch)
}

// Poke wakes the loop: rows were added.
func (d *Deliverer) Poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Loop delivers due outbox rows when woken and on every tick (for retries
// that come due), until ctx ends.
func (d *Deliverer) Loop(ctx context.Context, tick <-chan time.Time) {
	for {
		d.DeliverDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-tick:
		}
	}
}

// DeliverDue sends every due row, batch after batch, and reports how many
// rows it looked at. Platforms are served in parallel, so one slow platform
// does not hold up the others; within a platform, rows of a lane whose
// earlier row failed wait until that row's retry time, so a lane's messages
// are never reordered (within this process's lifetime). Only one goroutine
// runs DeliverDue at a time.
func (d *Deliverer) DeliverDue(ctx context.Context) int {
	total := 0
	for ctx.Err() == nil {
		rows, err := d.due(ctx)
		if err != nil {
			d.log.Error("outbox.read_failed", zap.Error(err))
			return total
		}
		sent := d.deliverByPlatform(ctx, rows)
		total += len(rows)
		if len(rows) < Batch || sent == 0 {
			return total
		}
	}
	return total
}

// Flush delivers what is due before shutdown, for a bounded time.
func (d *Deliverer) Flush(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, flushDeadline)
	defer cancel()
	d.DeliverDue(ctx)
}

// deliverByPlatform sends the rows of each platform in parallel and
// returns how many left the pending state. Rows of one platform (nearly
// every pass: one reply) are sent on this goroutine: a new one would grow
// its stack again through the HTTP client and the store for each reply.
func (d *Deliverer) deliverByPlatform(ctx context.Context, rows []store.OutboxMessage) int {
	byPlatform := make(map[string][]store.OutboxMessage)
	for _, m := range rows {
		byPlatform[m.Platform] = append(byPlatform[m.Platform], m)
	}
	if len(byPlatform) == 1 {
		return d.deliverRows(ctx, rows)
	}
	var wg sync.WaitGroup
	var sent atomic.Int64
	for _, group := range byPlatform {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent.Add(int64(d.deliverRows(ctx, group)))
		}()
	}
	wg.Wait()
	return int(sent.Load())
}

// deliverRows sends one platform's due rows in order and returns how many
// left the pending state.
func (d *Deliverer) deliverRows(ctx context.Context, rows []store.OutboxMessage) int {
	now := d.now()
	blocked := map[string]bool{}
	sent := 0
	for _, m := range rows {
		if ctx.Err() != nil {
			break // stopping: start no new send; the rows stay pending
		}
		if d.serves != nil && !d.serves(m.SessionKey) {
			continue // another node's lane: its owner delivers it
		}
		if blocked[m.SessionKey] || d.held(m.SessionKey, now) {
			blocked[m.SessionKey] = true
			continue
		}
		if d.deliverOne(ctx, m) {
			sent++
		} else {
			blocked[m.SessionKey] = true
		}
	}
	return sent
}

// held reports whether the lane's outbox waits for an earlier row's retry.
func (d *Deliverer) held(key string, now time.Time) bool {
	d.holdMu.Lock()
	defer d.holdMu.Unlock()
	until, ok := d.hold[key]
	if ok && !now.Before(until) {
		delete(d.hold, key)
		return false
	}
	return ok
}

// deliverOne sends one row and records the outcome; it reports whether the
// row left the pending state for good.
func (d *Deliverer) deliverOne(ctx context.Context, m store.OutboxMessage) bool {
	parts := &Parts{st: d.st, id: m.ID}
	redelivers := d.deferred.redeliveries()
	// A send that has started is finished, and its outcome recorded, even
	// when the deliverer is stopping: cancelling it midway could leave a
	// message the platform already has marked pending, and a restart would
	// send it twice. SendTimeout still bounds it.
	ctx = context.WithoutCancel(ctx)
	sctx, cancel := context.WithTimeout(ctx, SendTimeout)
	id, err := d.tr.SendRow(sctx, m, parts)
	cancel()
	var np *NoPlatformError
	if errors.As(err, &np) {
		d.markFailed(ctx, m, err.Error())
		return true
	}
	if errors.Is(err, ErrDeferred) {
		d.holdDeferred(ctx, m, redelivers) // out of the due set: the lane is not blocked
		return true
	}
	d.obs.Outbound(m.Platform, err)
	if err == nil {
		d.markSent(ctx, m.ID, id, parts)
		return true
	}
	var ra *RetryAfterError
	switch {
	case errors.Is(err, ErrPermanent):
		d.markFailed(ctx, m, err.Error())
		return true
	case errors.As(err, &ra):
		d.markRetry(ctx, m, ra.After, err)
	case m.Attempts+1 >= maxAttempts:
		d.markFailed(ctx, m, "gave up after retries: "+err.Error())
		return true
	default:
		d.markRetry(ctx, m, retryDelay(m.Attempts), err)
	}
	return false
}

// markSent records a delivered row, with its last part when the adapter
// left that part's record to the sent mark (one commit). Should that
// commit fail, the part is recorded on its own before the mark: a part the
// platform has must not be sent again because the mark failed.
func (d *Deliverer) markSent(ctx context.Context, id int64, platformMessageID string, parts *Parts) {
	part, deferred := parts.deferred(platformMessageID)
	if deferred {
		err := d.st.MarkSentWithPart(ctx, id, part, platformMessageID)
		if err == nil {
			return
		}
		d.log.Error("outbox.mark_sent_failed", zap.Int64("outbox", id), zap.Error(err))
		if err := parts.RecordPart(ctx, part, platformMessageID); err != nil {
			d.log.Error("outbox.record_part_failed", zap.Int64("outbox", id), zap.Error(err))
		}
	}
	if err := d.st.MarkSent(ctx, id, platformMessageID); err != nil {
		d.log.Error("outbox.mark_sent_failed", zap.Int64("outbox", id), zap.Error(err))
	}
}

func (d *Deliverer) markRetry(ctx context.Context, m store.OutboxMessage, after time.Duration, cause error) {
	d.log.Warn("outbox.retry", zap.Int64("outbox", m.ID), zap.String("platform", m.Platform),
		zap.Duration("after", after), zap.Error(cause))
	next := d.now().Add(after)
	// Later rows of the lane wait too, so its messages stay in order.
	d.holdMu.Lock()
	d.hold[m.SessionKey] = next
	d.holdMu.Unlock()
	if err := d.st.MarkRetry(ctx, m.ID, next, cause.Error()); err != nil {
		d.log.Error("outbox.mark_retry_failed", zap.Int64("outbox", m.ID), zap.Error(err))
	}
}

func (d *Deliverer) markFailed(ctx context.Context, m store.OutboxMessage, why string) {
	d.log.Error("outbox.failed", zap.Int64("outbox", m.ID), zap.String("platform", m.Platform), zap.String("why", why))
	if err := d.st.MarkFailed(ctx, m.ID, why); err != nil {
		d.log.Error("outbox.mark_failed_failed", zap.Int64("outbox", m.ID), zap.Error(err))
	}
}

// retryDelays are the outbox's waits after a failed send: 2s, 4s, 8s …
// capped at 5 minutes, jittered so a platform outage's retries spread out.
var retryDelays = backoff.Backoff{First: backoffBase, Max: backoffMax}

// retryDelay is the wait after a row's attempts-th failure.
func retryDelay(attempts int) time.Duration { return retryDelays.At(attempts) }

// MaxRetryDelay is the longest wait after a row's attempts-th failure (the
// delay before jitter shortened it): a row retried this long after it
// failed is always due again.
func MaxRetryDelay(attempts int) time.Duration {
	b := retryDelays
	b.Jitter = -1
	return b.At(attempts)
}
