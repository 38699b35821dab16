package daemon

import (
	"context"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/store"
)

// OpenStore opens the store store.driver names: the SQLite file under
// state_dir, or the PostgreSQL database of store.dsn.
func OpenStore(ctx context.Context, cfg *config.Config, opts store.Options) (*store.Store, error) {
	if cfg.Store.Postgres() {
		return store.OpenPostgres(ctx, cfg.Store.DSN, opts)
	}
	return store.Open(ctx, cfg.DatabasePath(), opts)
}
