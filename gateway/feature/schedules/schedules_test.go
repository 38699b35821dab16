package schedules

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/store"
)

// memStore keeps schedules and lane rows in memory, with the real store's
// rule that a firing commits only while its schedule is at that due time.
type memStore struct {
	mu    sync.Mutex
	seq   int64
	sched map[int64]store.Schedule
	lanes map[string]store.Lane
	inbox []store.Inbound
}

func newMemStore(lanes ...store.Lane) *memStore {
	s := &memStore{sched: make(map[int64]store.Schedule), lanes: make(map[string]store.Lane)}
	for _, l := range lanes {
		s.lanes[l.SessionKey] = l
	}
	return s
}

func (s *memStore) AddSchedule(_ context.Context, sc store.Schedule, _ int) (store.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	sc.ID = s.seq
	s.sched[sc.ID] = sc
	return sc, nil
}

func (s *memStore) Schedules(_ context.Context, key string) ([]store.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Schedule
	for id := int64(1); id <= s.seq; id++ {
		if sc, ok := s.sched[id]; ok && sc.SessionKey == key {
			out = append(out, sc)
		}
	}
	return out, nil
}

func (s *memStore) DueSchedules(_ context.Context, now time.Time, _ int) ([]store.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Schedule
	for id := int64(1); id <= s.seq; id++ {
		if sc, ok := s.sched[id]; ok && !sc.NextAt.After(now) && sc.Paused == "" {
			out = append(out, sc)
		}
	}
	return out, nil
}

func (s *memStore) DeleteSchedule(_ context.Context, _ string, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sched, id)
	return nil
}

func (s *memStore) FireSchedule(_ context.Context, f store.Firing) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.sched[f.Schedule.ID]
	if !ok || !cur.NextAt.Equal(f.Schedule.NextAt) {
		return 0, false, nil
	}
	if f.Inbound != nil {
		s.inbox = append(s.inbox, *f.Inbound)
	}
	if f.Next.IsZero() {
		delete(s.sched, cur.ID)
	} else {
		cur.NextAt = f.Next
		s.sched[cur.ID] = cur
	}
	return int64(len(s.inbox)), true, nil
}

func (s *memStore) PauseSchedule(_ context.Context, sc store.Schedule, reason string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.sched[sc.ID]
	if !ok || cur.Paused != "" {
		return false, nil
	}
	cur.Paused = reason
	s.sched[sc.ID] = cur
	return true, nil
}

func (s *memStore) Lane(_ context.Context, key string) (store.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.lanes[key]
	if !ok {
		return store.Lane{}, store.ErrNotFound
	}
	return l, nil
}

func (s *memStore) SetLaneOption(_ context.Context, key string, _ store.LaneOption, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[key]
	l.Timezone = value
	s.lanes[key] = l
	return nil
}

var room = chat.Address{Platform: "test", Kind: chat.LaneGroup, ChatID: "g"}

func roomRow() store.Lane {
	return store.Lane{SessionKey: room.SessionKey(), Platform: room.Platform, Kind: string(room.Kind), ChatID: room.ChatID}
}

// TestFiringWaitsForTheLanesNode: a firing of a lane another node serves
// is left to that node for ownerGrace, then fired here (its node may be
// down); it is counted and triggered once, with the schedule's maker and
// origin, and a second tick at the same time fires nothing.
func TestFiringWaitsForTheLanesNode(t *testing.T) {
	st := newMemStore(roomRow())
	due := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st.sched[1], st.seq = store.Schedule{ID: 1, SessionKey: room.SessionKey(), Prompt: "report", NextAt: due,
		Rule: "every 30m", CreatorID: "ana", CreatorName: "Ana"}, 1
	fired := 0
	h := exttest.NewHost(t)
	h.Triggers.NotServed = map[string]bool{room.SessionKey(): true}
	h.Register(t, New(Config{Fired: func() { fired++ }}, st))
	ctx := context.Background()

	now := due.Add(ownerGrace - time.Second)
	h.Clock = func() time.Time { return now }
	h.Tick(ctx)
	if got := h.Triggered(); len(got) != 0 {
		t.Fatalf("fired within the owner's grace on a node not serving the lane: %+v", got)
	}
	now = due.Add(ownerGrace)
	h.Tick(ctx)
	h.Tick(ctx)
	got := h.Triggered()
	if len(got) != 1 || fired != 1 {
		t.Fatalf("triggered %+v, counted %d; want one firing", got, fired)
	}
	if in := got[0].In; got[0].Addr != room || in.SenderID != "ana" || in.Text != "report" || in.Origin != "⏰ every 30m" ||
		in.MessageID != "schedule:1:"+strconv.FormatInt(due.UnixNano(), 10) {
		t.Errorf("the firing is %+v", got[0])
	}
	if next := st.sched[1].NextAt; !next.Equal(due.Add(30 * time.Minute)) {
		t.Errorf("next due %s, want 30m after the last", next)
	}
}

// TestUnscheduleInARoomByAnAdmin: in a shared room a schedule is its
// maker's to remove, or an admin's (codex.admins); a bystander is told
// who may.
func TestUnscheduleInARoomByAnAdmin(t *testing.T) {
	st := newMemStore(roomRow())
	st.sched[1], st.seq = store.Schedule{ID: 1, SessionKey: room.SessionKey(), Prompt: "notes", CreatorID: "ana", CreatorName: "Ana"}, 1
	h := exttest.NewHost(t)
	h.Admins = map[string]bool{"boss": true}
	h.Register(t, New(Config{}, st))
	ctx := context.Background()
	l := &exttest.Lane{Addr: room}
	cmd, _ := h.Registered("unschedule")

	for _, sender := range []string{"ben", "boss"} {
		cmd.Run(ctx, ext.Call{Lane: l, Name: "unschedule", Args: "s1", MsgID: "m-" + sender, Sender: sender})
	}
	n := h.Notices()
	if len(n) != 2 || n[0].Text != "Only Ana or an admin can decide this; s1 stays." || n[1].Text != "Removed s1: notes" {
		t.Errorf("notices %+v", n)
	}
}

// TestDefaultsAreTheTables: a Config built by hand gets config's limits.
func TestDefaultsAreTheTables(t *testing.T) {
	d := config.Defaults()
	c := Config{CatchUp: time.Minute}.WithDefaults()
	if c.MinInterval != d.Schedules.MinInterval || c.MaxPerLane != d.Schedules.MaxPerLane || c.CatchUp != time.Minute {
		t.Errorf("WithDefaults = %+v, want the table's limits around the one set", c)
	}
}
