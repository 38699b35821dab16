package gateway

import (
	"context"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// inbox closes the rows of recorded messages: done, failed or ignored, so
// that start-up recovery runs only what never finished.
type inbox struct {
	st interface {
		SetInboundState(ctx context.Context, id int64, state string) error
	}
	log *zap.Logger
}

// set moves an inbound row to state; a failure is logged (the row stays
// received, so a restart runs the message again).
func (b inbox) set(ctx context.Context, id int64, state string) { b.close(ctx, id, state) }

// close moves an inbound row to state and reports whether it is recorded
// (true for no row).
func (b inbox) close(ctx context.Context, id int64, state string) bool {
	if id == 0 {
		return true
	}
	if err := b.st.SetInboundState(ctx, id, state); err != nil {
		b.log.Error("inbound.state_failed", zap.Int64("inbound", id), zap.String("state", state), zap.Error(err))
		return false
	}
	return true
}

// ignore marks dropped items' inbox rows ignored, so restart recovery does
// not run them.
func (b inbox) ignore(ctx context.Context, items []item) {
	for _, it := range items {
		b.set(ctx, it.inboundID, store.InboundIgnored)
	}
}

// journal clears the turn journal of a lane whose turn ended or will not
// start now.
type journal struct {
	st interface {
		ClearJournal(ctx context.Context, sessionKey string) error
	}
	log *zap.Logger
}

// dropUnstarted clears the journal entry written with an item's inbound
// row when the item will not start now: left in the inbox as received, the
// next start runs it, which a journal entry would turn into a cut-off
// notice.
func (j journal) dropUnstarted(ctx context.Context, l *lane, it item) {
	if it.journal != nil {
		j.clear(ctx, l.key)
	}
}

func (j journal) clear(ctx context.Context, key string) {
	if err := j.st.ClearJournal(ctx, key); err != nil {
		j.log.Error("journal.clear_failed", zap.String("lane", key), zap.Error(err))
	}
}
