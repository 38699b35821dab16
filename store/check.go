package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/stdlib"
)

// Health is what Inspect found in a database file.
type Health struct {
	// Driver is the backend, "sqlite" or "postgres".
	Driver string
	// Server is PostgreSQL's server_version ("" for SQLite).
	Server string
	// QuickCheck is PRAGMA quick_check's verdict: "ok", or the first
	// problems it lists. PostgreSQL checks its own pages (checksums,
	// amcheck) and has no such quick verdict: "" there.
	QuickCheck string
	// SchemaVersion is the file's schema (PRAGMA user_version);
	// WantVersion the one this binary migrates to.
	SchemaVersion, WantVersion int
}

// Inspect checks the database at path read-only (gatewayd doctor): it
// takes neither the ownership lock nor the write lock, applies no
// migration, and so runs beside a running daemon. A missing file is
// os.ErrNotExist.
func Inspect(ctx context.Context, path string) (Health, error) {
	h := Health{Driver: "sqlite", WantVersion: len(migrations)}
	if _, err := os.Stat(path); err != nil {
		return h, fmt.Errorf("store: inspect %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", fileURI(path, "ro")+"&_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		return h, fmt.Errorf("store: inspect %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if h.SchemaVersion, err = schemaVersion(ctx, db); err != nil {
		return h, fmt.Errorf("store: inspect %s: %w", path, classify(err))
	}
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check(5)")
	if err != nil {
		return h, fmt.Errorf("store: quick_check %s: %w", path, classify(err))
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return h, fmt.Errorf("store: quick_check %s: %w", path, err)
		}
		found = append(found, line)
	}
	if err := rows.Err(); err != nil {
		return h, fmt.Errorf("store: quick_check %s: %w", path, classify(err))
	}
	if len(found) == 0 {
		return h, errors.New("store: quick_check answered nothing")
	}
	h.QuickCheck = strings.Join(found, "; ")
	return h, nil
}

// InspectPostgres reports the backend and schema version of the database
// dsn names (gatewayd doctor), read-only, beside a running daemon: it
// neither takes the ownership lock nor migrates. A database gatewayd never
// opened is at version 0.
func InspectPostgres(ctx context.Context, dsn string) (Health, error) {
	h := Health{Driver: "postgres", WantVersion: len(pgMigrations)}
	cfg, err := parsePGConfig(dsn)
	if err != nil {
		return h, err
	}
	where := pgWhere(cfg)
	cfg.RuntimeParams["default_transaction_read_only"] = "on"
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := db.QueryRowContext(ctx, "SHOW server_version").Scan(&h.Server); err != nil {
		return h, fmt.Errorf("store: inspect %s: %w", where, classify(err))
	}
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT to_regclass('schema_version') IS NOT NULL").Scan(&exists); err != nil {
		return h, fmt.Errorf("store: inspect %s: %w", where, classify(err))
	}
	if !exists {
		return h, nil
	}
	if h.SchemaVersion, err = pgSchemaVersion(ctx, db); err != nil {
		return h, fmt.Errorf("store: inspect %s: %w", where, classify(err))
	}
	return h, nil
}
