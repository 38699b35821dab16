package gatewaytest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/gatewayd/gatewayd/gateway"
)

// Parts is an in-memory gateway.PartLog for adapter tests: what the outbox
// records for one row, without a store. Like the store it is idempotent
// and refuses a part recorded out of order.
type Parts struct {
	mu  sync.Mutex
	ids []string
}

// RecordPart implements gateway.PartLog.
func (p *Parts) RecordPart(_ context.Context, part int, platformMessageID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case part < len(p.ids):
		return nil
	case part > len(p.ids):
		return fmt.Errorf("gatewaytest: part %d recorded before part %d", part, len(p.ids))
	}
	p.ids = append(p.ids, platformMessageID)
	return nil
}

// Sent returns the recorded parts, part 0 first.
func (p *Parts) Sent() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ids)
}

// Row returns out as the outbox delivers row id on its next attempt: with
// the parts recorded so far and this log.
func (p *Parts) Row(out gateway.Outbound, id int64) gateway.Outbound {
	out.ID, out.SentParts, out.Parts = id, p.Sent(), p
	return out
}
