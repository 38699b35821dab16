package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/internal/backoff"
	"github.com/gatewayd/gatewayd/store"
)

// Everything the gateway says goes through the store's outbox, so a reply
// survives a platform outage or a restart: the deliverer sends due rows in
// order, marks them sent, retries with backoff (or when the platform asks),
// and gives up only on a permanent failure or after maxAttempts.
const (
	outboxBatch   = 50
	maxAttempts   = 12
	backoffBase   = 2 * time.Second
	backoffMax    = 5 * time.Minute
	sendTimeout   = 30 * time.Second
	flushDeadline = 10 * time.Second
)

// outboxStore is the part of the Store the deliverer uses.
type outboxStore interface {
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

// deliverer sends the outbox: due rows in lane order, each platform in
// parallel, retries with backoff or when the platform says, and rows a
// platform deferred held until it asks for them again. It knows rows and
// platforms, nothing of lanes or turns.
type deliverer struct {
	st        outboxStore
	platforms map[string]Platform
	log       *zap.Logger
	obs       Observer
	now       func() time.Time

	wake     chan struct{} // rows were added (capacity 1)
	holdMu   sync.Mutex
	hold     map[string]time.Time // lanes whose rows wait for an earlier row's retry
	deferred *deferrals           // rows platforms took but nobody received yet
	// serves, in cluster mode, says which lanes' rows this node delivers.
	serves func(sessionKey string) bool
	// owned, in cluster mode, lists the lanes this node owns: only their
	// rows are read (SetLaneGate).
	owned func() []string
	// files opens the snapshots of file rows (nil: no files store).
	files *files.Store
}

// due reads the next batch of due rows: the owned lanes' in cluster mode,
// so other nodes' rows never fill the batch, else every lane's.
func (d *deliverer) due(ctx context.Context) ([]store.OutboxMessage, error) {
	if d.owned != nil {
		return d.st.DueOutboxFor(ctx, d.now(), d.owned(), outboxBatch)
	}
	return d.st.DueOutbox(ctx, d.now(), outboxBatch)
}

func newDeliverer(st outboxStore, platforms map[string]Platform, log *zap.Logger, obs Observer, now func() time.Time) *deliverer {
	return &deliverer{st: st, platforms: platforms, log: log, obs: obs, now: now,
		wake: make(chan struct{}, 1), hold: make(map[string]time.Time), deferred: newDeferrals()}
}

// poke wakes the loop: rows were added.
func (d *deliverer) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// deliverLoop delivers due outbox rows when woken and once a second (for
// retries that come due).
func (d *deliverer) loop(ctx context.Context, tick <-chan time.Time) {
	for {
		d.deliverDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-tick:
		}
	}
}

// deliverDue sends every due row, batch after batch, and reports how many
// rows it looked at. Platforms are served in parallel, so one slow platform
// does not hold up the others; within a platform, rows of a lane whose
// earlier row failed wait until that row's retry time, so a lane's messages
// are never reordered (within this process's lifetime). Only one goroutine
// runs deliverDue at a time.
func (d *deliverer) deliverDue(ctx context.Context) int {
	total := 0
	for ctx.Err() == nil {
		rows, err := d.due(ctx)
		if err != nil {
			d.log.Error("outbox.read_failed", zap.Error(err))
			return total
		}
		sent := d.deliverByPlatform(ctx, rows)
		total += len(rows)
		if len(rows) < outboxBatch || sent == 0 {
			return total
		}
	}
	return total
}

// deliverByPlatform sends the rows of each platform in parallel and
// returns how many left the pending state. Rows of one platform (nearly
// every pass: one reply) are sent on this goroutine: a new one would grow
// its stack again through the HTTP client and the store for each reply.
func (d *deliverer) deliverByPlatform(ctx context.Context, rows []store.OutboxMessage) int {
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
func (d *deliverer) deliverRows(ctx context.Context, rows []store.OutboxMessage) int {
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
func (d *deliverer) held(key string, now time.Time) bool {
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
func (d *deliverer) deliverOne(ctx context.Context, m store.OutboxMessage) bool {
	p, ok := d.platforms[m.Platform]
	if !ok {
		d.markFailed(ctx, m, fmt.Sprintf("no platform %q", m.Platform))
		return true
	}
	parts := &rowParts{st: d.st, id: m.ID}
	out := d.outboundOf(m, parts)
	redelivers := d.deferred.redeliveries()
	// A send that has started is finished, and its outcome recorded, even
	// when the deliverer is stopping: cancelling it midway could leave a
	// message the platform already has marked pending, and a restart would
	// send it twice. sendTimeout still bounds it.
	ctx = context.WithoutCancel(ctx)
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	id, err := sendOutbound(sctx, p, out)
	cancel()
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
func (d *deliverer) markSent(ctx context.Context, id int64, platformMessageID string, parts *rowParts) {
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

// outboundOf rebuilds the platform message from an outbox row: its kind
// and turn as stored, the parts an earlier attempt sent, and the row's
// part log, so every attempt (after a restart too) is the same delivery.
func (d *deliverer) outboundOf(m store.OutboxMessage, parts *rowParts) Outbound {
	out := Outbound{ID: m.ID, Address: addressOf(m.Platform, m.Kind, m.ChatID, m.TopicID, m.UserID),
		Kind: OutNotice, Text: m.Text, ReplyTo: m.ReplyTo, InReplyTo: m.ReplyTo, EditID: m.EditID,
		SentParts: m.SentParts, Parts: parts}
	switch m.OutKind {
	case store.OutboxReply:
		out.Kind = OutReply
		out.Turn = &TurnInfo{ThreadID: m.ThreadID, TurnID: m.TurnID, Status: m.TurnStatus}
	case store.OutboxFile:
		out.Kind = OutFile
		out.Turn = &TurnInfo{ThreadID: m.ThreadID, TurnID: m.TurnID, Status: m.TurnStatus}
		out.File = d.sentFile(m)
	}
	if m.ForkLane != "" {
		out.Fork = &ForkInfo{Lane: m.ForkLane, ThreadID: m.ThreadID}
	}
	out.Ping = m.Ping
	return out
}

// sentFile is the file of a file row, read through the lane's directory
// in the files store.
func (d *deliverer) sentFile(m store.OutboxMessage) *SentFile {
	f := sentFileOf(m)
	if d.files != nil {
		f.open = func() (*os.File, error) { return d.files.Open(m.SessionKey, m.FilePath) }
	}
	return f
}

// sendOutbound delivers out: a file row through the platform's upload,
// any other as a message.
func sendOutbound(ctx context.Context, p Platform, out Outbound) (string, error) {
	if out.File != nil {
		return p.SendFile(ctx, out)
	}
	return p.Send(ctx, out)
}

// rowParts is the PartLog of one outbox row, for one attempt: its parts go
// to the store, the last one with the sent mark when the adapter defers it.
type rowParts struct {
	st outboxStore
	id int64

	mu     sync.Mutex
	last   int    // the deferred last part's index
	lastID string // its platform message id; "" when none is deferred
}

// DeferLastPart implements PartLog: the part is recorded by markSent.
func (r *rowParts) DeferLastPart(part int, platformMessageID string) {
	r.mu.Lock()
	r.last, r.lastID = part, platformMessageID
	r.mu.Unlock()
}

// deferred returns the deferred last part when it is the one Send
// returned, the delivery's last.
func (r *rowParts) deferred(platformMessageID string) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.lastID != "" && r.lastID == platformMessageID
}

// partRecordTimeout bounds recording one part. The record is made on its
// own context: a part the platform accepted in the send's grace period,
// after the send's own deadline, must still be recorded, or the retry
// would send it again.
const partRecordTimeout = 5 * time.Second

func (r *rowParts) RecordPart(ctx context.Context, part int, platformMessageID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), partRecordTimeout)
	defer cancel()
	return r.st.RecordPart(ctx, r.id, part, platformMessageID)
}

func (d *deliverer) markRetry(ctx context.Context, m store.OutboxMessage, after time.Duration, cause error) {
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

func (d *deliverer) markFailed(ctx context.Context, m store.OutboxMessage, why string) {
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

// flushOutbox delivers what is due before shutdown, for a bounded time.
func (d *deliverer) flush(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, flushDeadline)
	defer cancel()
	d.deliverDue(ctx)
}

// holdDeferred holds a row whose send the platform deferred. redelivers is
// the lane's Redeliver count read before the send: if the platform asked
// for the lane's rows meanwhile, the row is made due again at once.
func (d *deliverer) holdDeferred(ctx context.Context, m store.OutboxMessage, redelivers uint64) {
	if err := d.st.HoldOutbox(ctx, m.ID); err != nil {
		// Still pending and not held: the deliverer sends it again on its
		// next pass, which is what a platform waiting for it wants anyway.
		d.log.Error("outbox.hold_failed", zap.Int64("outbox", m.ID), zap.Error(err))
		return
	}
	d.log.Debug("outbox.held", zap.Int64("outbox", m.ID), zap.String("lane", m.SessionKey))
	if d.deferred.redeliveries() != redelivers {
		d.unholdLane(ctx, m.SessionKey)
	}
}

// delivered marks a deferred row sent: the platform handed it over.
func (d *deliverer) delivered(ctx context.Context, id int64, platformMessageID string) error {
	if err := d.st.MarkSent(ctx, id, platformMessageID); err != nil {
		return fmt.Errorf("gateway: delivered %d: %w", id, err)
	}
	return nil
}

// redeliver makes the lane's held rows due again and wakes the deliverer.
func (d *deliverer) redeliver(ctx context.Context, sessionKey string) error {
	d.deferred.redelivered()
	if _, err := d.st.UnholdLane(ctx, sessionKey); err != nil {
		return fmt.Errorf("gateway: redeliver %s: %w", sessionKey, err)
	}
	d.poke()
	return nil
}

func (d *deliverer) unholdLane(ctx context.Context, sessionKey string) {
	if _, err := d.st.UnholdLane(ctx, sessionKey); err != nil {
		d.log.Error("outbox.unhold_failed", zap.String("lane", sessionKey), zap.Error(err))
		return
	}
	d.poke()
}

// releaseHeld makes every row held by the last process due again; Run calls
// it before anything is delivered.
func (d *deliverer) releaseHeld(ctx context.Context) error {
	n, err := d.st.UnholdAll(ctx)
	if err != nil {
		return fmt.Errorf("gateway: release held outbox rows: %w", err)
	}
	if n > 0 {
		d.log.Info("outbox.held_released", zap.Int("rows", n))
	}
	return nil
}
