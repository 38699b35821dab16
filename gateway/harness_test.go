package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/features"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/internal/testclock"
)

// withDefaultFeatures is the daemon's list of features with the ones a
// test configured itself in place of the default of the same name; a
// test's own feature the daemon does not have comes last.
func withDefaultFeatures(defaults, own []ext.Feature) []ext.Feature {
	mine := make(map[string]ext.Feature, len(own))
	for _, f := range own {
		mine[f.Name()] = f
	}
	list := make([]ext.Feature, 0, len(defaults)+len(own))
	for _, f := range defaults {
		if m, ok := mine[f.Name()]; ok {
			f = m
			delete(mine, f.Name())
		}
		list = append(list, f)
	}
	for _, f := range own {
		if mine[f.Name()] != nil {
			list = append(list, f)
		}
	}
	return list
}

// fakeClock is a settable clock so tests never sleep.
type fakeClock = testclock.Clock

func newFakeClock() *fakeClock { return testclock.New() }

// harness runs a gateway over the fakes.
type harness struct {
	g     *Gateway
	st    *fakeStore
	cx    *fakeCodex
	p     *fakePlatform
	clock *fakeClock
	stop  func()
}

type harnessOpt func(*Config)

func newHarness(t testing.TB, opts ...harnessOpt) *harness {
	t.Helper()
	return newHarnessOn(t, newFakeStore(), opts...)
}

// newHarnessOn runs a gateway over an existing store: the next start of a
// daemon whose state is st.
func newHarnessOn(t testing.TB, st *fakeStore, opts ...harnessOpt) *harness {
	t.Helper()
	h := &harness{st: st, cx: newFakeCodex(), p: newFakePlatform(), clock: newFakeClock()}
	h.st.now = h.clock.Now
	cfg := Config{MaxLive: 16, QueueLimit: 10, MaxConcurrentTurns: 4, DrainTimeout: 2 * time.Second,
		Logger: zaptest.NewLogger(t), Now: h.clock.Now}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.Features = withDefaultFeatures(features.List(features.Settings{Model: cfg.Thread.Model}, st, h.cx), cfg.Features)
	g, err := New(cfg.WithDefaults(), h.st, h.cx)
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(h.p)
	h.g = g
	return h
}

// start runs the gateway until the test ends.
func (h *harness) start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.g.Run(ctx) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Error("Run did not return")
			}
		})
	}
	t.Cleanup(h.stop)
	select {
	case <-h.g.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("gateway not ready")
	}
}

func apiAddr(lane string) Address {
	return Address{Platform: "test", Kind: LaneAPI, ChatID: lane}
}

func (h *harness) send(t testing.TB, lane, id, text string) {
	t.Helper()
	_, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr(lane), MessageID: id, SenderID: "u1", Text: text})
	if err != nil {
		t.Fatalf("Deliver(%s): %v", id, err)
	}
}

// waitFor polls cond until it holds; only for state with no signal.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 5*time.Second, what, cond)
}
