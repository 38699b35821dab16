package outbox

import (
	"context"
	"sync"
	"time"
)

// Parts is the part log of one outbox row, for one attempt (it implements
// the gateway's PartLog): its parts go to the store, the last one with
// the sent mark when the adapter defers it.
type Parts struct {
	st partStore
	id int64

	mu     sync.Mutex
	last   int    // the deferred last part's index
	lastID string // its platform message id; "" when none is deferred
}

// partStore is what a part log writes.
type partStore interface {
	RecordPart(ctx context.Context, id int64, part int, platformMessageID string) error
}

// DeferLastPart keeps the last part for the sent mark (markSent).
func (r *Parts) DeferLastPart(part int, platformMessageID string) {
	r.mu.Lock()
	r.last, r.lastID = part, platformMessageID
	r.mu.Unlock()
}

// deferred returns the deferred last part when it is the one Send
// returned, the delivery's last.
func (r *Parts) deferred(platformMessageID string) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.lastID != "" && r.lastID == platformMessageID
}

// partRecordTimeout bounds recording one part. The record is made on its
// own context: a part the platform accepted in the send's grace period,
// after the send's own deadline, must still be recorded, or the retry
// would send it again.
const partRecordTimeout = 5 * time.Second

// RecordPart records that the platform accepted part (0-based) as
// platformMessageID.
func (r *Parts) RecordPart(ctx context.Context, part int, platformMessageID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), partRecordTimeout)
	defer cancel()
	return r.st.RecordPart(ctx, r.id, part, platformMessageID)
}
