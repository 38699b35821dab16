package main

import (
	"context"
	"fmt"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/store"
)

// openConfiguredStore opens the store store.driver names: the SQLite file
// under state_dir, or the PostgreSQL database of store.dsn.
func openConfiguredStore(ctx context.Context, cfg *config.Config, opts store.Options) (*store.Store, error) {
	if cfg.Store.Postgres() {
		return store.OpenPostgres(ctx, cfg.Store.DSN, opts)
	}
	return store.Open(ctx, cfg.DatabasePath(), opts)
}

// checkPostgres is doctor's database check on PostgreSQL: the server
// answers, and the schema is one this binary runs on. PostgreSQL checks
// its own pages; there is no quick_check to run.
func (d *doctor) checkPostgres(ctx context.Context, dsn string) {
	h, err := store.InspectPostgres(ctx, dsn)
	if err != nil {
		d.fail(fmt.Sprintf("database (postgres): %v", err),
			"check store.dsn, that the server runs and that the role may connect to the database")
		return
	}
	d.pass("database: postgres %s reachable", h.Server)
	d.checkSchema(h)
}
