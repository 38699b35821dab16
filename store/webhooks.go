package store

import (
	"context"
	"fmt"
	"time"
)

// ClaimWebhookBody records that hook received a body with this SHA-256
// under deliveryID at now, and reports whether the delivery may run: true
// when no delivery brought the same body since `since`, or when the one
// that did is this same delivery id (a redelivery, which the inbox's
// unique message id then answers as a duplicate). false is a replay: the
// same signed body under another delivery id. Rows older than
// since are pruned in the same commit, so the table holds at most one
// replay window of deliveries.
//
// The claim is made before the inbox row: a crash in between leaves the
// claim, and the sender's redelivery (the same delivery id) still runs.
func (s *Store) ClaimWebhookBody(ctx context.Context, hook, bodySHA256, deliveryID string, now, since time.Time) (bool, error) {
	if hook == "" || bodySHA256 == "" || deliveryID == "" {
		return false, fmt.Errorf("%w: a webhook body claim needs a hook, a hash and a delivery id", ErrInvalid)
	}
	var first string
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		if _, err := q.ExecContext(ctx, "DELETE FROM webhook_bodies WHERE received_at < ?", toDB(since)); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, `INSERT INTO webhook_bodies (hook, body_sha256, delivery_id, received_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (hook, body_sha256) DO NOTHING`,
			hook, bodySHA256, deliveryID, toDB(now)); err != nil {
			return err
		}
		return q.QueryRowContext(ctx, "SELECT delivery_id FROM webhook_bodies WHERE hook = ? AND body_sha256 = ?",
			hook, bodySHA256).Scan(&first)
	})
	if err != nil {
		return false, fmt.Errorf("store: claim webhook body of %q: %w", hook, err)
	}
	return first == deliveryID, nil
}
