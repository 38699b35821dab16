package gatewaytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// DeferLastPart implements gateway.PartLog. With no sent mark to write it
// with, the last part is recorded at once.
func (p *Parts) DeferLastPart(part int, platformMessageID string) {
	// An out-of-order part is an adapter's bug that RecordPart reports;
	// here the adapter has nothing to return it to, so the gap stays
	// visible in Sent.
	_ = p.RecordPart(context.Background(), part, platformMessageID)
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

// PartMarker opens part i of an n-part reply made by PartedReply; a fake
// platform can hold a send by it.
func PartMarker(i, n int) string { return fmt.Sprintf("[part %d of %d]", i, n) }

// PartedReply is n paragraphs, each its PartMarker and filler characters:
// with filler above half a platform's message limit and below the limit,
// the platform's splitter sends exactly n messages, one paragraph each.
func PartedReply(n, filler int) string {
	paras := make([]string, n)
	for i := range paras {
		paras[i] = PartMarker(i, n) + " " + strings.Repeat("x", filler)
	}
	return strings.Join(paras, "\n\n")
}
