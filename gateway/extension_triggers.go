package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

// The core's side of ext.Triggers: turns no one typed, and the features'
// background loops.

// triggerServices are what ext.Triggers use of the core, and the loops the
// features registered, which Run starts.
type triggerServices struct {
	in   *intake
	gate func() LaneGate // the gateway's, set by SetLaneGate before Run (nil: one node)

	mu    sync.Mutex
	loops []featureLoop
}

// featureLoop is a feature's work every so often (ext.Triggers.Every).
type featureLoop struct {
	every time.Duration
	fn    func(ctx context.Context)
}

// extTriggers is a feature's host's ext.Triggers: turns no one typed and
// background loops.
type extTriggers struct{ *extCore }

var _ ext.Triggers = extTriggers{}

func (e extTriggers) Every(d time.Duration, fn func(ctx context.Context)) {
	e.triggers.mu.Lock()
	defer e.triggers.mu.Unlock()
	e.triggers.loops = append(e.triggers.loops, featureLoop{every: d, fn: fn})
}

func (e extTriggers) Trigger(ctx context.Context, addr chat.Address, in *store.Inbound,
	write func(ctx context.Context) (int64, bool, error)) (int64, bool, error) {
	return e.triggers.in.recordTriggered(ctx, addr, in, write)
}

func (e extTriggers) Serves(key string) bool {
	g := e.triggers.gate()
	return g == nil || g.Serves(key)
}

func (e extTriggers) MakerAllowed(addr chat.Address, maker string) bool {
	return e.triggers.in.makerAllowed(addr, maker)
}

// run starts the features' loops under ctx, each counted in wg; the
// tickers come from newTicker, the gateway's (tests drive it).
func (t *triggerServices) run(ctx context.Context, newTicker tickerFunc, wg *sync.WaitGroup) {
	t.mu.Lock()
	loops := append([]featureLoop(nil), t.loops...)
	t.mu.Unlock()
	for _, l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.run(ctx, newTicker)
		}()
	}
}

// run calls fn now, for what came due while gatewayd was down, and then
// at every tick until ctx ends.
func (l featureLoop) run(ctx context.Context, newTicker tickerFunc) {
	tick, stop := newTicker(l.every)
	defer stop()
	l.fn(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			l.fn(ctx)
		}
	}
}
