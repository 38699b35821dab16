package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A channel's row only ever grows: engaged stays on, and neither a later
// TrackChannel nor an AdvanceChannel with a smaller id moves its message
// id back (two nodes write it around a handover, in either order).
func TestChannelIndexNeverMovesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openTestStore(t)
	t0 := time.Unix(1_700_000_000, 0).UTC()
	steps := []struct {
		name string
		do   func() error
		want ChannelRecord
	}{
		{"track", func() error { return s.TrackChannel(ctx, "discord", "22", true, 100, t0) },
			ChannelRecord{ChannelID: "22", Engaged: true, LastMessageID: 100, SeenAt: t0}},
		{"advance back", func() error { return s.AdvanceChannel(ctx, "discord", "22", 50) },
			ChannelRecord{ChannelID: "22", Engaged: true, LastMessageID: 100, SeenAt: t0}},
		{"track older, not engaged", func() error { return s.TrackChannel(ctx, "discord", "22", false, 70, t0.Add(-time.Hour)) },
			ChannelRecord{ChannelID: "22", Engaged: true, LastMessageID: 100, SeenAt: t0}},
		{"advance", func() error { return s.AdvanceChannel(ctx, "discord", "22", 150) },
			ChannelRecord{ChannelID: "22", Engaged: true, LastMessageID: 150, SeenAt: t0}},
		{"track later", func() error { return s.TrackChannel(ctx, "discord", "22", false, 0, t0.Add(time.Hour)) },
			ChannelRecord{ChannelID: "22", Engaged: true, LastMessageID: 150, SeenAt: t0.Add(time.Hour)}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, err := s.Channels(ctx, "discord", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != st.want {
			t.Fatalf("after %s: index %+v, want [%+v]", st.name, got, st.want)
		}
	}
}

// AdvanceChannel moves only a channel the index holds; ForgetChannel
// removes one; platforms have indexes of their own; Channels lists the
// most recently seen first, up to its limit.
func TestChannelIndexAdvanceForgetAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openTestStore(t)
	t0 := time.Unix(1_700_000_000, 0).UTC()
	if err := s.AdvanceChannel(ctx, "discord", "untracked", 10); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"a", "b", "c"} {
		if err := s.TrackChannel(ctx, "discord", id, false, int64(i+1), t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TrackChannel(ctx, "other", "z", false, 1, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.ForgetChannel(ctx, "discord", "b"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Channels(ctx, "discord", 0)
	if err != nil {
		t.Fatal(err)
	}
	if ids := channelIDs(got); fmt.Sprint(ids) != "[c a]" {
		t.Fatalf("discord index %v, want [c a] (newest first, b forgotten, untracked never added)", ids)
	}
	if got, err = s.Channels(ctx, "discord", 1); err != nil || fmt.Sprint(channelIDs(got)) != "[c]" {
		t.Fatalf("Channels(limit 1) = %v, %v; want [c]", channelIDs(got), err)
	}
}

func TestChannelIndexRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openTestStore(t)
	for _, c := range []struct {
		name string
		err  error
	}{
		{"no platform", s.TrackChannel(ctx, "", "1", false, 0, time.Now())},
		{"no channel", s.TrackChannel(ctx, "discord", "", false, 0, time.Now())},
		{"negative id", s.TrackChannel(ctx, "discord", "1", false, -1, time.Now())},
		{"advance negative", s.AdvanceChannel(ctx, "discord", "1", -5)},
		{"forget no channel", s.ForgetChannel(ctx, "discord", "")},
	} {
		if !errors.Is(c.err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, c.err)
		}
	}
}

// Two nodes (two stores on one database on PostgreSQL, one store's
// writers on SQLite) each add their own channels and advance a shared one
// at the same time: every channel is in the index afterwards, and the
// shared one has the largest id either wrote.
func TestChannelIndexConcurrentWritersKeepEveryChannel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testDBPath(t)
	var nodes []*Store
	if onPostgres() {
		shared := Options{Cluster: ClusterOptions{Shared: true}}
		nodes = []*Store{openAt(t, path, shared), openAt(t, path, shared)}
	} else {
		s := openAt(t, path, Options{})
		nodes = []*Store{s, s}
	}
	if err := nodes[0].TrackChannel(ctx, "discord", "shared", false, 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	const perNode = 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*perNode*2)
	for n, s := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perNode {
				errs <- s.TrackChannel(ctx, "discord", fmt.Sprintf("n%d-%d", n, i), false, int64(i+1), time.Now())
				errs <- s.AdvanceChannel(ctx, "discord", "shared", int64(1000*(n+1)+i))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := nodes[0].Channels(ctx, "discord", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*perNode+1 {
		t.Fatalf("index has %d channels, want %d: %v", len(got), 2*perNode+1, channelIDs(got))
	}
	for _, r := range got {
		if r.ChannelID == "shared" && r.LastMessageID != 2000+perNode-1 {
			t.Errorf("shared channel's last id = %d, want %d (the largest written)", r.LastMessageID, 2000+perNode-1)
		}
	}
}

func TestDeleteCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := openTestStore(t)
	if err := s.SetCursor(ctx, "x", "1"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second: deleting what is gone is no error
		if err := s.DeleteCursor(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := s.Cursor(ctx, "x"); err != nil || ok {
		t.Fatalf("Cursor after delete: ok %v, err %v; want gone", ok, err)
	}
}

func channelIDs(recs []ChannelRecord) []string {
	ids := make([]string, 0, len(recs))
	for _, r := range recs {
		ids = append(ids, r.ChannelID)
	}
	return ids
}

// BenchmarkChannelCursor is the index write each handled Discord message
// costs: AdvanceChannel (the guarded UPDATE of the channel's row) next to
// SetCursor (the plain upsert the per-lane cursor was before), one at a
// time, with CPU time per operation reported from rusage.
func BenchmarkChannelCursor(b *testing.B) {
	for _, c := range []struct {
		name  string
		write func(ctx context.Context, s *Store, i int) error
	}{
		{"AdvanceChannel", func(ctx context.Context, s *Store, i int) error {
			return s.AdvanceChannel(ctx, "discord", "22", int64(i+1))
		}},
		{"SetCursor", func(ctx context.Context, s *Store, i int) error {
			return s.SetCursor(ctx, "discord.last.22", fmt.Sprint(i+1))
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			s := openAt(b, testDBPath(b), Options{})
			if err := s.TrackChannel(ctx, "discord", "22", false, 0, time.Now()); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu := processCPU()
			for i := range b.N {
				if err := c.write(ctx, s, i); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
