package matrix

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/backoff"
)

// editTxns gives edits transaction ids that a retry repeats: the same
// target and text get the same id until the target is edited to another
// text (a later edit back to an earlier text is a new edit, not a replay).
// The process nonce keeps ids of an earlier process from aliasing.
type editTxns struct {
	mu    sync.Mutex
	nonce string
	last  *lru[editGen]
}

type editGen struct {
	text string
	gen  int
}

func newEditTxns() *editTxns {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return &editTxns{nonce: hex.EncodeToString(b[:]), last: newLRU[editGen](1024)}
}

func (t *editTxns) txn(target id.EventID, text string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.last.get(string(target))
	if !ok || g.text != text {
		g = editGen{text: text, gen: g.gen + 1}
		t.last.put(string(target), g)
	}
	return txnID(int64(g.gen), 0, "edit:"+t.nonce+":"+string(target), text)
}

// postAttempts bounds postRetrying's attempts.
const postAttempts = 3

// postRetrying posts an event that has no outbox row to make a retry
// reuse its transaction id (a preview, a /fork's thread root): it retries
// a transient failure itself with the same id, so an answer lost after the
// homeserver stored the event cannot make the event appear twice.
func (a *Adapter) postRetrying(ctx context.Context, room id.RoomID, typ event.Type, content any, txn string) (string, error) {
	delays := backoff.New(a.cfg.RetryBackoff, 4*a.cfg.RetryBackoff)
	for attempt := 1; ; attempt++ {
		eid, err := a.post(ctx, room, typ, content, txn)
		if err == nil || attempt == postAttempts || isPermanent(err) || ctx.Err() != nil {
			return eid, err
		}
		var wait *gateway.RetryAfterError
		if errors.As(err, &wait) {
			return eid, err // the caller honours the homeserver's wait
		}
		if !backoff.Sleep(ctx, delays.Next()) {
			return "", err
		}
	}
}
