package matrix

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/backoff"
)

// syncer runs our own /sync loop.
//
// Why not mautrix's Client.Sync: it saves next_batch before the batch's
// handlers run (deliberately), and its listeners cannot refuse an event,
// so a kill -9 mid-batch or a failed Deliver skips events for good. Here
// the token moves past a batch only after Sink.Deliver returned nil for
// every event in it; a failed batch is fetched again from the same token,
// and a replay after a crash is recognised by the database (MessageID =
// event id).
type syncer struct {
	a       *Adapter
	saved   string
	savedAt time.Time
	filter  string
}

// cursorSaveInterval spaces the token writes (each a durable commit). An
// older token costs only replays, which the database drops as duplicates;
// the loop saves the latest token when it stops.
const cursorSaveInterval = time.Second

// maxGapEvents bounds the backfill of one room after a limited timeline:
// a week offline must not start a turn per message.
const maxGapEvents = 1000

func newSyncer(a *Adapter) *syncer { return &syncer{a: a} }

func (a *Adapter) self() id.UserID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.me
}

func (s *syncer) cursorName() string { return "matrix.next_batch:" + string(s.a.self()) }

func (s *syncer) poll(ctx context.Context, sink gateway.Sink) error {
	since, err := s.load(ctx)
	if err != nil {
		return err
	}
	s.saved = since
	defer func() { s.flush(since) }()
	syncDelays := backoff.New(s.a.cfg.RetryBackoff, maxRetryBackoff)
	deliverDelays := backoff.New(s.a.cfg.RetryBackoff, maxRetryBackoff)
	failing := true
	for ctx.Err() == nil {
		resp, err := s.fetch(ctx, since, failing)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if tokenRefused(err) {
				return s.a.tokenRejected("sync", err)
			}
			failing = true
			s.pause(ctx, "matrix.sync_failed", err, syncDelays)
			continue
		}
		failing = false
		syncDelays.Reset()
		dropNulls(resp)
		if since == "" {
			err = s.first(ctx, resp)
		} else {
			err = s.apply(ctx, sink, since, resp)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, gateway.ErrShuttingDown) {
				return nil
			}
			s.pause(ctx, "matrix.batch_not_committed: it will be fetched again", err, deliverDelays)
			continue
		}
		deliverDelays.Reset()
		first := since == ""
		since = resp.NextBatch // only now: every event of the batch is committed
		s.maybeSave(ctx, since, first)
		s.a.markReady()
	}
	return nil
}

func (s *syncer) pause(ctx context.Context, what string, err error, delays *backoff.Backoff) {
	wait := delays.Next()
	if d, ok := retryAfter(err); ok {
		wait = max(wait, d)
	}
	s.a.log.Warn(what, zap.Duration("retry_in", wait), zap.Error(err))
	backoff.Sleep(ctx, wait)
}

// fetch makes one /sync. The first request and any after a failure do not
// wait (timeout 0), as mautrix does, so recovery is immediate.
// initialSyncDeadline bounds the first /sync (no stored token).
const initialSyncDeadline = 5 * time.Minute

func (s *syncer) fetch(ctx context.Context, since string, failing bool) (*mautrix.RespSync, error) {
	if s.filter == "" {
		if err := s.createFilter(ctx); err != nil {
			return nil, err
		}
	}
	wait := s.a.cfg.SyncTimeout
	if failing || since == "" {
		wait = 0
	}
	// A hung /sync is cut and made again: it never stalls the lanes. The
	// first sync carries every joined room's state, which a large account's
	// homeserver takes minutes to build: cut early, it would never finish.
	deadline := wait + s.a.cfg.syncGrace
	if since == "" {
		deadline = max(deadline, initialSyncDeadline)
	}
	rctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	return s.a.cli.FullSyncRequest(rctx, mautrix.ReqSync{Timeout: int(wait.Milliseconds()), Since: since, FilterID: s.filter})
}

// createFilter asks for what the adapter reads: up to 100 timeline events
// per room (Synapse's default is 10, which makes gaps common), no
// presence, ephemeral or account data.
func (s *syncer) createFilter(ctx context.Context) error {
	f := &mautrix.Filter{
		Room: &mautrix.RoomFilter{
			Timeline:    &mautrix.FilterPart{Limit: 100},
			State:       &mautrix.FilterPart{LazyLoadMembers: true},
			Ephemeral:   &mautrix.FilterPart{NotTypes: []event.Type{{Type: "*"}}},
			AccountData: &mautrix.FilterPart{NotTypes: []event.Type{{Type: "*"}}},
		},
		Presence:    &mautrix.FilterPart{NotTypes: []event.Type{{Type: "*"}}},
		AccountData: &mautrix.FilterPart{NotTypes: []event.Type{{Type: "*"}}},
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := s.a.cli.CreateFilter(rctx, f)
	if err != nil {
		return err
	}
	s.filter = resp.FilterID
	return nil
}

// load reads the stored token, retrying a failing store: guessing would
// skip or replay everything.
func (s *syncer) load(ctx context.Context) (string, error) {
	delays := backoff.New(s.a.cfg.RetryBackoff, maxRetryBackoff)
	for {
		v, _, err := s.a.cfg.Cursor.Cursor(ctx, s.cursorName())
		if err == nil {
			return v, nil
		}
		s.a.log.Warn("matrix: could not read the sync token; retrying", zap.Error(err))
		if !backoff.Sleep(ctx, delays.Next()) {
			return "", nil
		}
	}
}

// maybeSave persists since at most once a cursorSaveInterval (always
// after the first sync, which delivered nothing and must not be redone).
func (s *syncer) maybeSave(ctx context.Context, since string, now bool) {
	if since == s.saved || (!now && s.a.cfg.Now().Sub(s.savedAt) < cursorSaveInterval) {
		return
	}
	if err := s.a.cfg.Cursor.SetCursor(ctx, s.cursorName(), since); err != nil {
		s.a.log.Warn("matrix: could not save the sync token (a restart replays from the older one)", zap.Error(err))
		return
	}
	s.saved, s.savedAt = since, s.a.cfg.Now()
}

func (s *syncer) flush(since string) {
	if since == "" || since == s.saved {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.maybeSave(ctx, since, true)
}

// first handles the first sync ever (no stored token): rooms are learnt
// and invites joined, but no timeline event is delivered — they are
// history from before gatewayd was set up.
func (s *syncer) first(ctx context.Context, resp *mautrix.RespSync) error {
	skipped := 0
	for room, jr := range resp.Rooms.Join {
		s.a.rooms.learn(room, jr)
		skipped += len(jr.Timeline.Events)
		if err := s.a.tellEncrypted(ctx, room); err != nil {
			return err
		}
	}
	for room, inv := range resp.Rooms.Invite {
		if err := s.a.handleInvite(ctx, room, inv); err != nil {
			return err
		}
	}
	s.a.log.Info("matrix: first sync; earlier history not delivered", zap.Int("skipped_events", skipped),
		zap.Int("rooms", len(resp.Rooms.Join)))
	return nil
}

// apply delivers a batch: invites first, then each room in timeline order
// (a gap filled before its timeline). A transient failure fails the whole
// batch; an answer no retry changes skips only what it concerns.
func (s *syncer) apply(ctx context.Context, sink gateway.Sink, since string, resp *mautrix.RespSync) error {
	for room, inv := range resp.Rooms.Invite {
		if err := s.a.handleInvite(ctx, room, inv); err != nil {
			return err
		}
	}
	rooms := make([]id.RoomID, 0, len(resp.Rooms.Join))
	for room := range resp.Rooms.Join {
		rooms = append(rooms, room)
	}
	slices.Sort(rooms)
	for _, room := range rooms {
		if err := s.applyRoom(ctx, sink, since, room, resp.Rooms.Join[room]); err != nil {
			return fmt.Errorf("matrix: room %s: %w", room, err)
		}
	}
	return nil
}

func (s *syncer) applyRoom(ctx context.Context, sink gateway.Sink, since string, room id.RoomID, jr *mautrix.SyncJoinedRoom) error {
	s.a.rooms.learn(room, jr)
	if err := s.a.checkEncrypted(ctx, room); err != nil {
		return err
	}
	if s.a.rooms.encrypted(room) {
		return s.a.tellEncrypted(ctx, room)
	}
	events := jr.Timeline.Events
	start := s.afterOwnJoin(events)
	if start == 0 && jr.Timeline.Limited && jr.Timeline.PrevBatch != "" {
		gap, err := s.gap(ctx, room, jr.Timeline.PrevBatch, since)
		switch {
		case isPermanent(err):
			s.a.log.Warn("matrix.gap_skipped: events missed during the downtime are not delivered",
				zap.String("room", string(room)), zap.Error(err))
		case err != nil:
			return err
		default:
			events = append(gap, events...)
		}
	}
	r := newReceipts()
	for _, e := range events[start:] {
		e.RoomID = room // /sync leaves it out: the room is the map key
		addr, err := s.a.handle(ctx, sink, e)
		if isPermanent(err) {
			// Refetching cannot change this answer; stopping here would
			// stall every room behind this one event.
			s.a.log.Warn("matrix.event_skipped", zap.String("room", string(room)),
				zap.String("event_id", string(e.ID)), zap.Error(err))
			continue
		}
		if err != nil {
			return err
		}
		r.note(addr, e.ID)
	}
	s.a.sendReceipts(room, r)
	return nil
}

// afterOwnJoin is where delivery starts in a timeline: after our own
// invite (what was said between invite and join is for us) or join, when
// the timeline holds one — what came before is history of a room we just
// joined, never fetched as a gap.
func (s *syncer) afterOwnJoin(events []*event.Event) int {
	me := string(s.a.self())
	start := 0
	for i, e := range events {
		if e.Type.Type != event.StateMember.Type || e.StateKey == nil || *e.StateKey != me {
			continue
		}
		if !parsed(e, event.StateMember) {
			continue
		}
		switch e.Content.AsMember().Membership {
		case event.MembershipInvite:
			start = i + 1
		case event.MembershipJoin:
			if start == 0 {
				start = i + 1
			}
		}
	}
	return start
}

// gap fetches what a limited timeline left out, between the stored token
// and prev_batch, oldest first.
func (s *syncer) gap(ctx context.Context, room id.RoomID, from, to string) ([]*event.Event, error) {
	var out []*event.Event
	for len(out) < maxGapEvents {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		resp, err := s.a.cli.Messages(rctx, room, from, to, mautrix.DirectionBackward, nil, 100)
		cancel()
		if err != nil {
			return nil, mapError("fill a gap", err)
		}
		out = append(out, withoutNulls(resp.Chunk)...)
		if resp.End == "" || len(resp.Chunk) == 0 {
			break
		}
		from = resp.End
	}
	if len(out) >= maxGapEvents {
		s.a.log.Warn("matrix.gap_truncated: only the latest events after the downtime are delivered",
			zap.String("room", string(room)), zap.Int("events", len(out)))
	}
	slices.Reverse(out)
	return out, nil
}

// dropNulls removes what a homeserver sent as JSON null where a room or
// an event belongs: nothing downstream has to guard against nil.
func dropNulls(resp *mautrix.RespSync) {
	for room, jr := range resp.Rooms.Join {
		if jr == nil {
			delete(resp.Rooms.Join, room)
			continue
		}
		jr.State.Events = withoutNulls(jr.State.Events)
		jr.Timeline.Events = withoutNulls(jr.Timeline.Events)
	}
	for room, inv := range resp.Rooms.Invite {
		if inv == nil {
			delete(resp.Rooms.Invite, room)
			continue
		}
		inv.State.Events = withoutNulls(inv.State.Events)
	}
}

func withoutNulls(events []*event.Event) []*event.Event {
	return slices.DeleteFunc(events, func(e *event.Event) bool { return e == nil })
}
