package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/gateway"
)

// The relay: a lane's stream to requests other nodes hold, and their calls
// to the lane's owner (cluster/stream.go). The API platform offers what it
// streams; a queue coalesces it (a message's latest preview replaces the
// one before) and one goroutine writes it, so a slow database costs the
// turn nothing: past maxStreamQueue events the newest are dropped and
// counted (the notices among them stay in the outbox for the lane's next
// request; only the live view misses them).

// maxStreamQueue bounds the events waiting to be written.
const maxStreamQueue = 1024

// streamWriteTimeout bounds one write of the queue.
const streamWriteTimeout = 5 * time.Second

// pruneEvery is how often a node prunes the relay's tables.
const pruneEvery = time.Minute

// callPoll is how often a caller looks for its reply when no notification
// came (the LISTEN connection reconnecting).
const callPoll = 250 * time.Millisecond

type streamKey struct{ message, kind string }

// streamQueue is the events offered and not yet written.
type streamQueue struct {
	mu      sync.Mutex
	pending []cluster.StreamEvent
	latest  map[streamKey]int // a message's event of a kind → its index in pending
	dropped int
	ready   chan struct{} // capacity 1: something to write
	// offered counts the events taken in; written how many of them are
	// in the database; flushed is closed (and replaced) as written grows.
	offered, written uint64
	flushed          chan struct{}
}

func newStreamQueue() *streamQueue {
	return &streamQueue{latest: map[streamKey]int{}, ready: make(chan struct{}, 1), flushed: make(chan struct{})}
}

// offer queues ev, replacing the message's queued event of the same kind.
func (q *streamQueue) offer(ev cluster.StreamEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := streamKey{ev.MessageID, ev.Kind}
	replaces := ev.MessageID != "" && ev.Kind != cluster.EndKind
	if i, ok := q.latest[key]; ok && replaces {
		q.pending[i] = ev
		q.offered++
		return
	}
	if len(q.pending) >= maxStreamQueue {
		q.dropped++
		return
	}
	q.offered++
	if replaces {
		q.latest[key] = len(q.pending)
	}
	q.pending = append(q.pending, ev)
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take empties the queue; dropped is how many were refused since the
// last, upTo the count of offers the events cover (for wrote).
func (q *streamQueue) take() (events []cluster.StreamEvent, dropped int, upTo uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	events, dropped, upTo = q.pending, q.dropped, q.offered
	q.pending, q.dropped = nil, 0
	clear(q.latest)
	return events, dropped, upTo
}

// wrote says the offers up to upTo are in the database.
func (q *streamQueue) wrote(upTo uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if upTo > q.written {
		q.written = upTo
		close(q.flushed)
		q.flushed = make(chan struct{})
	}
}

// waitWritten waits until everything offered before it was called is in
// the database, or ctx ends.
func (q *streamQueue) waitWritten(ctx context.Context) {
	q.mu.Lock()
	target := q.offered
	for q.written < target {
		ch := q.flushed
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		q.mu.Lock()
	}
	q.mu.Unlock()
}

// putBack returns events a failed write took, ahead of what came since
// (newer events of a message still replace them).
func (q *streamQueue) putBack(events []cluster.StreamEvent) {
	q.mu.Lock()
	newer := q.pending
	q.pending = nil
	clear(q.latest)
	q.mu.Unlock()
	for _, ev := range append(events, newer...) {
		q.offer(ev)
	}
}

// Offer hands an event of a lane's stream to the other nodes; it never
// blocks.
func (c *Coordinator) Offer(ev cluster.StreamEvent) { c.streamQ.offer(ev) }

// FlushStream waits until what was offered before it is written, or ctx
// ends: an answer recorded after it cannot overtake the turn's last
// events on their way to the node holding the request.
func (c *Coordinator) FlushStream(ctx context.Context) { c.streamQ.waitWritten(ctx) }

// StreamPosition is cluster.Stream.Position.
func (c *Coordinator) StreamPosition(ctx context.Context) (int64, error) {
	return c.stream.Position(ctx)
}

// StreamSince is cluster.Stream.Since.
func (c *Coordinator) StreamSince(ctx context.Context, sessionKey string, after int64, limit int) ([]cluster.StreamEvent, error) {
	return c.stream.Since(ctx, sessionKey, after, limit)
}

// SetStreamed makes streamed (the API platform's StreamNotified) hear of
// every lane another node streamed for. Call it before Run.
func (c *Coordinator) SetStreamed(streamed func(sessionKey string)) { c.streamed = streamed }

// CallHandler runs a call another node made to a lane this node owns; its
// result is the reply.
type CallHandler func(ctx context.Context, sessionKey, op string, body []byte) []byte

// HandleCalls makes handle run the calls whose op starts with prefix and
// a slash ("api/questions.list"). Call it before Run.
func (c *Coordinator) HandleCalls(prefix string, handle CallHandler) {
	c.callHandlers[prefix] = handle
}

// callHandler is the handler of op, nil for an op nobody here handles.
func (c *Coordinator) callHandler(op string) CallHandler {
	prefix, _, ok := strings.Cut(op, "/")
	if !ok {
		return nil
	}
	return c.callHandlers[prefix]
}

// writeStream writes the offered events until ctx ends.
func (c *Coordinator) writeStream(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.streamQ.ready:
		}
		events, dropped, upTo := c.streamQ.take()
		if dropped > 0 {
			c.log.Warn("cluster.stream_dropped", zap.Int("events", dropped), zap.Int("limit", maxStreamQueue))
		}
		wctx, cancel := context.WithTimeout(ctx, streamWriteTimeout)
		err := c.stream.Publish(wctx, events)
		cancel()
		if err == nil {
			c.streamQ.wrote(upTo)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		c.log.Warn("cluster.stream_write_failed", zap.Int("events", len(events)), zap.Error(err))
		c.streamQ.putBack(events)
		select { // the database is away: do not spin on it
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// pruneStream prunes the relay's tables, at most every pruneEvery.
func (c *Coordinator) pruneStream(ctx context.Context) {
	c.mu.Lock()
	due := time.Since(c.prunedAt) >= pruneEvery
	if due {
		c.prunedAt = time.Now()
	}
	c.mu.Unlock()
	if !due {
		return
	}
	if err := c.stream.Prune(ctx, cluster.StreamKeep); err != nil && ctx.Err() == nil {
		c.log.Warn("cluster.stream_prune_failed", zap.Error(err))
	}
}

// CallOwner asks the node owning the lane to run op with body and returns
// its reply; cluster.ErrNoOwner when no other node owns it. It waits for
// the reply until ctx ends, and then withdraws the call.
func (c *Coordinator) CallOwner(ctx context.Context, sessionKey, op string, body []byte) ([]byte, error) {
	id, err := c.stream.Ask(ctx, sessionKey, op, body)
	if errors.Is(err, cluster.ErrNoOwner) {
		return nil, fmt.Errorf("%w (%w)", gateway.ErrNoLaneOwner, err)
	}
	if err != nil {
		return nil, err
	}
	replied := c.awaitReply(id)
	defer c.forgetReply(id)
	tick := time.NewTicker(callPoll)
	defer tick.Stop()
	for {
		reply, ok, err := c.stream.Replied(ctx, id)
		if ok {
			return reply, nil
		}
		if err != nil && ctx.Err() == nil {
			c.log.Debug("cluster.call_read_failed", zap.Int64("call", id), zap.Error(err))
		}
		select {
		case <-ctx.Done():
			go func() { // the caller has waited long enough
				wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				defer cancel()
				_ = c.stream.Withdraw(wctx, id) // pruned later if this fails too
			}()
			return nil, ctx.Err()
		case <-replied:
		case <-tick.C:
		}
	}
}

func (c *Coordinator) awaitReply(id int64) <-chan struct{} {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	c.replies[id] = ch
	c.mu.Unlock()
	return ch
}

func (c *Coordinator) forgetReply(id int64) {
	c.mu.Lock()
	delete(c.replies, id)
	c.mu.Unlock()
}

// replyNotified wakes the caller waiting for call payload.
func (c *Coordinator) replyNotified(payload string) {
	id, err := strconv.ParseInt(payload, 10, 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	ch := c.replies[id]
	c.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// maxCallsAtOnce bounds the calls this node runs at the same time.
const maxCallsAtOnce = 8

// wakeCalls makes the call worker look for calls to run.
func (c *Coordinator) wakeCalls() {
	select {
	case c.callsWake <- struct{}{}:
	default:
	}
}

// runCalls runs the calls made to the lanes this node owns until ctx ends,
// each in its own goroutine, at most maxCallsAtOnce at a time: a slow one
// (a press editing a message on a slow platform) holds up neither the
// others nor the cluster loop that wakes it.
func (c *Coordinator) runCalls(ctx context.Context) {
	slots := make(chan struct{}, maxCallsAtOnce)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.callsWake:
		}
		calls, err := c.stream.TakeCalls(ctx, c.Serves, clusterCallTO)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("cluster.calls_read_failed", zap.Error(err))
		}
		for _, call := range calls {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				defer func() { <-slots }()
				c.runCall(ctx, call)
			}()
		}
	}
}

func (c *Coordinator) runCall(ctx context.Context, call cluster.Call) {
	cctx, cancel := context.WithTimeout(ctx, clusterCallTO)
	defer cancel()
	reply := []byte{} // an op of a newer build: an empty reply
	if handle := c.callHandler(call.Op); handle != nil {
		reply = handle(cctx, call.SessionKey, call.Op, call.Body)
	} else {
		c.log.Warn("cluster.call_unknown", zap.String("op", call.Op), zap.String("lane", call.SessionKey))
	}
	if err := c.stream.Reply(cctx, call.ID, reply); err != nil && ctx.Err() == nil {
		c.log.Warn("cluster.call_reply_failed", zap.Int64("call", call.ID), zap.String("lane", call.SessionKey), zap.Error(err))
	}
}
