package slack

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// The index of conversations, one row per lane in the store's channel
// table: "<channel>:<thread_ts>" for a thread, "<channel>" for a DM. The
// row's last message id is the ts of the last message handled there, in
// microseconds (tsMicros), which a reconnect backfills after.

const (
	maxIndexLanes = 500 // older lanes are not backfilled
	// maxBackfilledIDs bounds the ids of messages backfill delivered that
	// are remembered to skip their live events: more than one reconnect's
	// backfill reads (maxBackfillLanes lanes of a few hundred messages).
	maxBackfilledIDs = 8192
	reseenAfter      = time.Hour // how stale a lane's seen time gets before it is written again
)

// laneKey is a lane's row in the index.
func laneKey(addr gateway.Address) string {
	if addr.Kind == gateway.LaneThread {
		return addr.ChatID + ":" + addr.TopicID
	}
	return addr.ChatID
}

// addressOfKey is the lane of an index row.
func addressOfKey(key string) gateway.Address {
	if ch, ts, ok := strings.Cut(key, ":"); ok {
		return threadAddress(ch, ts)
	}
	return dmAddress(key)
}

func threadAddress(channel, threadTS string) gateway.Address {
	return gateway.Address{Platform: PlatformName, Kind: gateway.LaneThread, ChatID: channel, TopicID: threadTS}
}

func dmAddress(channel string) gateway.Address {
	return gateway.Address{Platform: PlatformName, Kind: gateway.LaneDM, ChatID: channel}
}

// tsMicros is a Slack ts ("<seconds>.<6 digits>") as microseconds: an
// int64 that grows with time, as the index's cursor column wants.
func tsMicros(ts string) (int64, error) {
	sec, frac, ok := strings.Cut(ts, ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if !ok || err1 != nil || err2 != nil || len(frac) != 6 || s < 0 || f < 0 {
		return 0, fmt.Errorf("slack: ts %q is not <seconds>.<6 digits>", ts)
	}
	return s*1_000_000 + f, nil
}

// formatTS is tsMicros's inverse.
func formatTS(micros int64) string {
	return fmt.Sprintf("%d.%06d", micros/1_000_000, micros%1_000_000)
}

type laneRecord struct {
	engaged bool  // a thread the bot was addressed in, started or opened
	seen    int64 // unix seconds of the last write of the row
}

// laneIndex caches the index for routing (which threads are engaged) and
// moves the cursors; the store keeps it across restarts.
type laneIndex struct {
	store CursorStore
	log   *zap.Logger
	mu    sync.Mutex
	lanes map[string]laneRecord
	last  map[string]int64 // cursor last written per tracked lane, this process
	held  map[string]bool  // lanes whose cursor must not move any more, this process

	fromBackfill  map[string]struct{} // ids of messages backfill delivered, this process
	backfillOrder []string            // fromBackfill's ids, oldest first
}

func newLaneIndex(store CursorStore, log *zap.Logger) *laneIndex {
	return &laneIndex{store: store, log: log, lanes: map[string]laneRecord{}, last: map[string]int64{},
		held: map[string]bool{}, fromBackfill: map[string]struct{}{}}
}

// refresh reads the index from the store into the cache and returns it,
// the most recently seen first.
func (l *laneIndex) refresh(ctx context.Context) ([]store.ChannelRecord, error) {
	if l.store == nil {
		return nil, nil
	}
	recs, err := l.store.Channels(ctx, PlatformName, maxIndexLanes)
	if err != nil {
		return nil, fmt.Errorf("slack: read lanes: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		mine := l.lanes[r.ChannelID]
		mine.engaged = mine.engaged || r.Engaged
		mine.seen = max(mine.seen, r.SeenAt.Unix())
		l.lanes[r.ChannelID] = mine
	}
	return recs, nil
}

func (l *laneIndex) engaged(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lanes[key].engaged
}

// ingesting tracks the lane of message ts before the message is
// delivered, with the cursor just before it: killed after this, the next
// start reads the message again (the inbox drops it if it was committed).
// The store never moves a cursor back.
func (l *laneIndex) ingesting(ctx context.Context, key, ts string, engaged bool, now time.Time) error {
	n, err := tsMicros(ts)
	if err != nil {
		return err
	}
	return l.trackAfter(ctx, key, engaged, max(n-1, 0), now)
}

func (l *laneIndex) trackAfter(ctx context.Context, key string, engaged bool, after int64, now time.Time) error {
	l.mu.Lock()
	rec, ok := l.lanes[key]
	changed := !ok || (engaged && !rec.engaged) || now.Unix()-rec.seen > int64(reseenAfter/time.Second)
	rec.engaged = rec.engaged || engaged
	if changed {
		rec.seen = now.Unix()
	}
	l.lanes[key] = rec
	l.mu.Unlock()
	if !changed || l.store == nil {
		return nil
	}
	if err := l.store.TrackChannel(ctx, PlatformName, key, rec.engaged, after, now); err != nil {
		return fmt.Errorf("slack: save lane: %w", err)
	}
	return nil
}

func (l *laneIndex) forget(ctx context.Context, key string) error {
	l.mu.Lock()
	delete(l.lanes, key)
	delete(l.last, key)
	l.mu.Unlock()
	if l.store == nil {
		return nil
	}
	if err := l.store.ForgetChannel(ctx, PlatformName, key); err != nil {
		return fmt.Errorf("slack: forget lane: %w", err)
	}
	return nil
}

// backfilled records that backfill delivered message id, so that its
// live event, arriving moments later, is acked without a second delivery.
// The set is exact and bounded: an id pushed out is at worst delivered
// twice, which the inbox drops.
func (l *laneIndex) backfilled(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.fromBackfill[id]; ok {
		return
	}
	if len(l.backfillOrder) >= maxBackfilledIDs {
		delete(l.fromBackfill, l.backfillOrder[0])
		l.backfillOrder = l.backfillOrder[1:]
	}
	l.fromBackfill[id] = struct{}{}
	l.backfillOrder = append(l.backfillOrder, id)
}

// deliveredByBackfill reports whether backfill delivered message id in
// this process. Only that: a lane's cursor says where backfill starts,
// not which messages were delivered, so an envelope Slack redelivers or
// sends out of order is delivered even when a later one came first.
func (l *laneIndex) deliveredByBackfill(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.fromBackfill[id]
	return ok
}

// hold freezes the lane's cursor for the rest of this process: a message
// there was not delivered, and the next backfill must find it.
func (l *laneIndex) hold(key string) {
	l.mu.Lock()
	l.held[key] = true
	l.mu.Unlock()
}

// advance moves a tracked lane's cursor (where the next backfill starts)
// to ts; untracked lanes have no cursor and are not remembered. The store
// keeps the larger cursor; last only saves writes that would not move it.
func (l *laneIndex) advance(ctx context.Context, key, ts string) error {
	n, err := tsMicros(ts)
	if err != nil {
		return err
	}
	l.mu.Lock()
	_, tracked := l.lanes[key]
	if !tracked || l.held[key] || n <= l.last[key] {
		l.mu.Unlock()
		return nil
	}
	l.last[key] = n
	l.mu.Unlock()
	if l.store == nil {
		return nil
	}
	if err := l.store.AdvanceChannel(ctx, PlatformName, key, n); err != nil {
		return fmt.Errorf("slack: save cursor: %w", err)
	}
	return nil
}
