package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/store"
)

// PollGate is Telegram's PollGate: wait to hold "telegram:poller", then
// poll until it is lost, writing the offset fenced by the lease.
func (c *Coordinator) PollGate(ctx context.Context) (context.Context, telegram.CursorStore, error) {
	for {
		if c.isSuperseded() {
			<-ctx.Done() // another process is this node now
			return nil, nil, ctx.Err()
		}
		l, ok, err := c.node.Acquire(ctx, cluster.PollerLease, c.ttl)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("cluster.poller_acquire_failed", zap.Error(err))
		}
		if ok {
			held, cancel := context.WithCancel(ctx)
			c.mu.Lock()
			c.poller = cancel
			c.mu.Unlock()
			c.keeper.Hold(l)
			c.log.Info("cluster.poller_elected", zap.Int64("token", l.Token))
			return held, pollerCursor{st: c.st, lease: l}, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(c.nextRound(ctx, []string{cluster.PollerLease})): // at the poller's expiry, not a tick later
		}
	}
}

// pollerCursor is the Telegram offset store of one poller election: every
// write carries the election's lease, so after another node took the
// lease (this one paused past it, say) the write is refused and the
// poller stops instead of moving the new poller's offset.
type pollerCursor struct {
	st    Store
	lease cluster.Lease
}

func (p pollerCursor) Cursor(ctx context.Context, name string) (string, bool, error) {
	return p.st.Cursor(ctx, name)
}

func (p pollerCursor) SetCursor(ctx context.Context, name, value string) error {
	err := p.st.SetCursorFenced(ctx, name, value, p.lease.Name, p.lease.Token)
	if errors.Is(err, store.ErrFenced) {
		return fmt.Errorf("%w: %w", telegram.ErrNotPoller, err)
	}
	return err
}
