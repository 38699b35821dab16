package matrix

import (
	"context"
	"time"

	"go.uber.org/zap"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/gatewayd/gatewayd/gateway"
)

// receipts collects, per thread ("main" for the room), the last addressed
// event delivered in one batch: one read receipt each.
type receipts map[string]id.EventID

func newReceipts() receipts { return receipts{} }

func (r receipts) note(addr *gateway.Address, ev id.EventID) {
	if addr == nil {
		return
	}
	thread := "main"
	if addr.Kind == gateway.LaneThread {
		thread = addr.TopicID
	}
	r[thread] = ev
}

// sendReceipts sends the batch's read receipts in the background, best
// effort: they never hold the sync loop.
func (a *Adapter) sendReceipts(room id.RoomID, r receipts) {
	if len(r) == 0 {
		return
	}
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for thread, ev := range r {
			err := a.cli.SendReceipt(ctx, room, ev, event.ReceiptTypeRead, &mautrix.ReqSendReceipt{ThreadID: thread})
			if err != nil {
				a.log.Debug("matrix: read receipt not sent", zap.Error(err))
			}
		}
	}()
}
