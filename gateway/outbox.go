package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

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

// notify enqueues a gateway notice for a lane. inReplyTo names the inbound
// message it answers ("" for notices about the lane in general).
func (g *Gateway) notify(ctx context.Context, addr Address, inReplyTo, text string) {
	_, err := g.st.Enqueue(ctx, noticeFor(addr, inReplyTo, text))
	if err != nil {
		g.log.Error("outbox.enqueue_failed", zap.String("lane", addr.SessionKey()), zap.Error(err))
		g.sendDirect(ctx, addr, inReplyTo, "", text)
		return
	}
	g.wakeOutbox()
}

// noticeFor is the outbox row of a gateway notice for a lane.
func noticeFor(addr Address, inReplyTo, text string) store.OutboxMessage {
	return store.OutboxMessage{SessionKey: addr.SessionKey(), Platform: addr.Platform,
		Kind: string(addr.Kind), ChatID: addr.ChatID, TopicID: addr.TopicID, UserID: addr.UserID,
		Text: text, ReplyTo: inReplyTo}
}

// sendDirect is the last resort when the outbox cannot be written: one
// attempt straight to the platform, logged if it fails.
func (g *Gateway) sendDirect(ctx context.Context, addr Address, inReplyTo, editID, text string) {
	p, ok := g.platforms[addr.Platform]
	if !ok {
		g.log.Error("outbox.direct_no_platform", zap.String("platform", addr.Platform))
		return
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	_, err := p.Send(sctx, Outbound{Address: addr, Kind: OutNotice, Text: text, ReplyTo: inReplyTo,
		InReplyTo: inReplyTo, EditID: editID})
	g.obs.Outbound(addr.Platform, err)
	if err != nil {
		g.log.Error("outbox.direct_failed", zap.String("lane", addr.SessionKey()), zap.Error(err))
	}
}

func (g *Gateway) wakeOutbox() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// deliverLoop delivers due outbox rows when woken and once a second (for
// retries that come due).
func (g *Gateway) deliverLoop(ctx context.Context) {
	tick, stop := g.newTicker(time.Second)
	defer stop()
	for {
		g.deliverDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-g.wake:
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
func (g *Gateway) deliverDue(ctx context.Context) int {
	total := 0
	for ctx.Err() == nil {
		rows, err := g.st.DueOutbox(ctx, g.now(), outboxBatch)
		if err != nil {
			g.log.Error("outbox.read_failed", zap.Error(err))
			return total
		}
		byPlatform := make(map[string][]store.OutboxMessage)
		for _, m := range rows {
			byPlatform[m.Platform] = append(byPlatform[m.Platform], m)
		}
		var wg sync.WaitGroup
		var sent atomic.Int64
		for _, group := range byPlatform {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sent.Add(int64(g.deliverRows(ctx, group)))
			}()
		}
		wg.Wait()
		total += len(rows)
		if len(rows) < outboxBatch || sent.Load() == 0 {
			return total
		}
	}
	return total
}

// deliverRows sends one platform's due rows in order and returns how many
// left the pending state.
func (g *Gateway) deliverRows(ctx context.Context, rows []store.OutboxMessage) int {
	now := g.now()
	blocked := map[string]bool{}
	sent := 0
	for _, m := range rows {
		if ctx.Err() != nil {
			break // stopping: start no new send; the rows stay pending
		}
		if blocked[m.SessionKey] || g.held(m.SessionKey, now) {
			blocked[m.SessionKey] = true
			continue
		}
		if g.deliverOne(ctx, m) {
			sent++
		} else {
			blocked[m.SessionKey] = true
		}
	}
	return sent
}

// held reports whether the lane's outbox waits for an earlier row's retry.
func (g *Gateway) held(key string, now time.Time) bool {
	g.holdMu.Lock()
	defer g.holdMu.Unlock()
	until, ok := g.hold[key]
	if ok && !now.Before(until) {
		delete(g.hold, key)
		return false
	}
	return ok
}

// deliverOne sends one row and records the outcome; it reports whether the
// row left the pending state for good.
func (g *Gateway) deliverOne(ctx context.Context, m store.OutboxMessage) bool {
	p, ok := g.platforms[m.Platform]
	if !ok {
		g.markFailed(ctx, m, fmt.Sprintf("no platform %q", m.Platform))
		return true
	}
	out := g.outboundOf(m)
	redelivers := g.deferred.redeliveries(m.SessionKey)
	// A send that has started is finished, and its outcome recorded, even
	// when the deliverer is stopping: cancelling it midway could leave a
	// message the platform already has marked pending, and a restart would
	// send it twice. sendTimeout still bounds it.
	ctx = context.WithoutCancel(ctx)
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	id, err := p.Send(sctx, out)
	cancel()
	if errors.Is(err, ErrDeferred) {
		g.holdDeferred(ctx, m, redelivers) // out of the due set: the lane is not blocked
		return true
	}
	g.obs.Outbound(m.Platform, err)
	if err == nil {
		if err := g.st.MarkSent(ctx, m.ID, id); err != nil {
			g.log.Error("outbox.mark_sent_failed", zap.Int64("outbox", m.ID), zap.Error(err))
		}
		return true
	}
	var ra *RetryAfterError
	switch {
	case errors.Is(err, ErrPermanent):
		g.markFailed(ctx, m, err.Error())
		return true
	case errors.As(err, &ra):
		g.markRetry(ctx, m, ra.After, err)
	case m.Attempts+1 >= maxAttempts:
		g.markFailed(ctx, m, "gave up after retries: "+err.Error())
		return true
	default:
		g.markRetry(ctx, m, retryDelay(m.Attempts), err)
	}
	return false
}

// outboundOf rebuilds the platform message from an outbox row: its kind
// and turn as stored, the parts an earlier attempt sent, and the row's
// part log, so every attempt (after a restart too) is the same delivery.
func (g *Gateway) outboundOf(m store.OutboxMessage) Outbound {
	out := Outbound{ID: m.ID, Address: addressOf(m.Platform, m.Kind, m.ChatID, m.TopicID, m.UserID),
		Kind: OutNotice, Text: m.Text, ReplyTo: m.ReplyTo, InReplyTo: m.ReplyTo, EditID: m.EditID,
		SentParts: m.SentParts, Parts: rowParts{st: g.st, id: m.ID}}
	if m.OutKind == store.OutboxReply {
		out.Kind = OutReply
		out.Turn = &TurnInfo{ThreadID: m.ThreadID, TurnID: m.TurnID, Status: m.TurnStatus}
	}
	return out
}

// rowParts is the PartLog of one outbox row: its parts go to the store.
type rowParts struct {
	st Store
	id int64
}

func (r rowParts) RecordPart(ctx context.Context, part int, platformMessageID string) error {
	return r.st.RecordPart(ctx, r.id, part, platformMessageID)
}

func (g *Gateway) markRetry(ctx context.Context, m store.OutboxMessage, after time.Duration, cause error) {
	g.log.Warn("outbox.retry", zap.Int64("outbox", m.ID), zap.String("platform", m.Platform),
		zap.Duration("after", after), zap.Error(cause))
	next := g.now().Add(after)
	// Later rows of the lane wait too, so its messages stay in order.
	g.holdMu.Lock()
	g.hold[m.SessionKey] = next
	g.holdMu.Unlock()
	if err := g.st.MarkRetry(ctx, m.ID, next, cause.Error()); err != nil {
		g.log.Error("outbox.mark_retry_failed", zap.Int64("outbox", m.ID), zap.Error(err))
	}
}

func (g *Gateway) markFailed(ctx context.Context, m store.OutboxMessage, why string) {
	g.log.Error("outbox.failed", zap.Int64("outbox", m.ID), zap.String("platform", m.Platform), zap.String("why", why))
	if err := g.st.MarkFailed(ctx, m.ID, why); err != nil {
		g.log.Error("outbox.mark_failed_failed", zap.Int64("outbox", m.ID), zap.Error(err))
	}
}

// retryDelays are the outbox's waits after a failed send: 2s, 4s, 8s …
// capped at 5 minutes, jittered so a platform outage's retries spread out.
var retryDelays = backoff.Backoff{First: backoffBase, Max: backoffMax}

// retryDelay is the wait after a row's attempts-th failure.
func retryDelay(attempts int) time.Duration { return retryDelays.At(attempts) }

// flushOutbox delivers what is due before shutdown, for a bounded time.
func (g *Gateway) flushOutbox(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, flushDeadline)
	defer cancel()
	g.deliverDue(ctx)
}

// addressOf rebuilds a lane address from stored routing fields.
func addressOf(platform, kind, chatID, topicID, userID string) Address {
	return Address{Platform: platform, Kind: LaneKind(kind), ChatID: chatID, TopicID: topicID, UserID: userID}
}

// addressOfLane rebuilds the address of a stored lane.
func addressOfLane(l store.Lane) Address {
	return addressOf(l.Platform, l.Kind, l.ChatID, l.TopicID, l.UserID)
}
