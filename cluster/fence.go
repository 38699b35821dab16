package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// fencedCode is the SQLSTATE cluster_fence raises; "GW" keeps it out of
// PostgreSQL's own classes.
const fencedCode = "GWF01"

// ErrFenced means the database refused a write because its lease token is
// no longer current: a newer owner exists.
var ErrFenced = errors.New("cluster: write refused, lease no longer held")

// FenceSQL is the predicate a write embeds to be refused by the database
// once its lease has been taken over, with the lease name and token as
// parameters $1 and $2 (write your own placeholders to move them), e.g.
//
//	INSERT INTO t (k, v) SELECT $3, $4 WHERE cluster_fence($1, $2)
//
// It holds the lease row FOR SHARE until the transaction ends, so a takeover
// waits for a write already under way instead of overtaking it. In a WHERE
// with other conditions it runs per matching row (and not at all when no
// row matches); a transaction of several writes calls Fence once first.
const FenceSQL = "cluster_fence($1, $2)"

// Execer is what Fence needs: the caller's *sql.Tx. (A *sql.DB would
// satisfy it too, but a fence outside the write's transaction guards
// nothing.)
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Fence checks, inside the caller's transaction tx, that l is still the
// current lease; the writes that follow in tx are then safe from any
// takeover until tx ends. It returns an error matching ErrFenced if not.
func Fence(ctx context.Context, tx Execer, l Lease) error {
	_, err := tx.ExecContext(ctx, `SELECT cluster_fence($1, $2)`, l.Name, l.Token)
	return FenceError(err)
}

// FenceError turns the database's fence refusal into an error matching
// ErrFenced (keeping the original as well) and returns other errors as
// they are. Callers that embed FenceSQL in their own statements pass their
// errors through it.
func FenceError(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == fencedCode {
		return fmt.Errorf("%w: %w", ErrFenced, err)
	}
	return err
}
