package discord

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/store"
)

// lockstepStore is a real store whose first two calls each wait for the
// other: two nodes' writes of the index then overlap, each node's first
// look at the database coming before the other's write.
type lockstepStore struct {
	*store.Store
	calls atomic.Int32
	both  chan struct{}
}

func (s *lockstepStore) meet() {
	switch s.calls.Add(1) {
	case 1:
		select {
		case <-s.both:
		case <-time.After(5 * time.Second): // the other node never wrote: let the test report it
		}
	case 2:
		close(s.both)
	}
}

func (s *lockstepStore) Cursor(ctx context.Context, name string) (string, bool, error) {
	s.meet()
	return s.Store.Cursor(ctx, name)
}

func (s *lockstepStore) TrackChannel(ctx context.Context, platform, channelID string, engaged bool, last int64, seenAt time.Time) error {
	s.meet()
	return s.Store.TrackChannel(ctx, platform, channelID, engaged, last, seenAt)
}

func (s *lockstepStore) Channels(ctx context.Context, platform string, limit int) ([]store.ChannelRecord, error) {
	s.meet()
	return s.Store.Channels(ctx, platform, limit)
}

// Two nodes on one database each add a lane at the same moment (the
// process test's two shards' first messages): both lanes are in the index
// a third node reads. A shared index that each node reads, merges and
// writes back loses one of them.
func TestLaneIndexConcurrentNodesKeepBothLanes(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	shared := &lockstepStore{Store: st, both: make(chan struct{})}
	log := zaptest.NewLogger(t)
	nodeA, nodeB := newLaneIndex(shared, log), newLaneIndex(shared, log)

	var wg sync.WaitGroup
	now := time.Unix(1_796_000_000, 0)
	for _, w := range []struct {
		index   *laneIndex
		channel string
	}{{nodeA, "10"}, {nodeB, "22"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.index.track(ctx, w.channel, false, now); err != nil {
				t.Errorf("track %s: %v", w.channel, err)
			}
		}()
	}
	wg.Wait()

	nodeC := newLaneIndex(st, log)
	if err := nodeC.load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := nodeC.channelIDs(); !slices.Equal(got, []string{"10", "22"}) {
		t.Fatalf("index read by a third node = %v, want both lanes [10 22]", got)
	}
}

// An index of the old shape (one JSON blob, a cursor per lane) is moved
// into the store's rows at load, cursors included, and the old names are
// deleted so a lane forgotten later does not come back.
func TestLaneIndexImportsLegacyBlob(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for name, value := range map[string]string{
		legacyLanesCursor:       `{"11":{"engaged":true,"seen":1796000000},"12":{"seen":1796000100}}`,
		legacyLastPrefix + "11": "1577386560888766464",
	} {
		if err := st.SetCursor(ctx, name, value); err != nil {
			t.Fatal(err)
		}
	}
	l := newLaneIndex(st, zaptest.NewLogger(t))
	if err := l.load(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := st.Channels(ctx, PlatformName, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.ChannelRecord{
		{ChannelID: "12", SeenAt: time.Unix(1796000100, 0).UTC()},
		{ChannelID: "11", Engaged: true, LastMessageID: 1577386560888766464, SeenAt: time.Unix(1796000000, 0).UTC()},
	}
	if !slices.Equal(recs, want) {
		t.Fatalf("imported index %+v, want %+v", recs, want)
	}
	if !l.engaged("11") {
		t.Error("thread 11 no longer engaged after the import")
	}
	for _, name := range []string{legacyLanesCursor, legacyLastPrefix + "11"} {
		if _, ok, err := st.Cursor(ctx, name); err != nil || ok {
			t.Errorf("legacy cursor %s still there after the import (err %v)", name, err)
		}
	}
}

func TestLaneIndexRefusesABadMessageID(t *testing.T) {
	l := newLaneIndex(nil, zaptest.NewLogger(t))
	for _, id := range []string{"", "abc", "-1", "18446744073709551615"} {
		if err := l.advance(context.Background(), "10", id); err == nil {
			t.Errorf("advance(%q) = nil, want an error", id)
		}
	}
}
