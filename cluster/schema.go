package cluster

import (
	"context"
	"database/sql"
	"fmt"

	// The pgx driver registers itself as "pgx" for database/sql; the store's
	// PostgreSQL backend uses the same driver, so one process loads one.
	_ "github.com/jackc/pgx/v5/stdlib"
)

// migrations are the cluster's own tables, applied in order; the schema
// version is how many have run. Append only: never edit a shipped entry.
var migrations = []string{
	// 1: nodes, leases, the database clock and the fence.
	`CREATE TABLE cluster_nodes (
		node_id      text PRIMARY KEY,
		started_at   timestamptz NOT NULL,
		heartbeat_at timestamptz NOT NULL
	);
	CREATE TABLE cluster_leases (
		name        text PRIMARY KEY,
		holder      text NOT NULL,
		token       bigint NOT NULL,
		acquired_at timestamptz NOT NULL,
		expires_at  timestamptz NOT NULL
	);
	-- Every lease and heartbeat time comes from here, the database's clock,
	-- so the nodes' clocks never enter into who owns what.
	CREATE FUNCTION cluster_now() RETURNS timestamptz
		LANGUAGE sql VOLATILE AS $$ SELECT clock_timestamp() $$;
	-- cluster_fence raises unless token is the current token of a held
	-- lease. A write embeds it (SELECT cluster_fence(...) or in a WHERE) in
	-- its own transaction; FOR SHARE makes a takeover wait until that
	-- transaction ends, so no ex-owner write can commit after a takeover.
	CREATE FUNCTION cluster_fence(lease_name text, lease_token bigint) RETURNS boolean
		LANGUAGE plpgsql VOLATILE AS $$
	BEGIN
		PERFORM 1 FROM cluster_leases
			WHERE name = lease_name AND token = lease_token AND holder <> ''
			FOR SHARE;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'cluster: lease % token % is no longer held', lease_name, lease_token
				USING ERRCODE = '` + fencedCode + `';
		END IF;
		RETURN true;
	END $$;`,
	// 2: shipped rollout chunks, append only, one row per shipped range.
	`CREATE TABLE rollout_chunks (
		thread_id text NOT NULL,
		rel_path  text NOT NULL,
		"offset"  bigint NOT NULL,
		data      bytea NOT NULL,
		PRIMARY KEY (thread_id, "offset")
	);`,
	// 3: which process (incarnation) of a node wrote its heartbeat and took
	// each lease, so a restarted node can take back the leases of its own
	// dead predecessor at once (Join) and a superseded one notices.
	`ALTER TABLE cluster_nodes ADD COLUMN incarnation text NOT NULL DEFAULT '';
	ALTER TABLE cluster_leases ADD COLUMN incarnation text NOT NULL DEFAULT '';`,
	// 4: what a lane's owner streams to requests held by other nodes, and
	// the calls other nodes make to a lane's owner (stream.go). Both are
	// live state that a database crash may lose without harm: UNLOGGED.
	`CREATE UNLOGGED TABLE cluster_stream (
		id          bigserial PRIMARY KEY,
		session_key text NOT NULL,
		message_id  text NOT NULL DEFAULT '',
		kind        text NOT NULL,
		body        bytea NOT NULL,
		node_id     text NOT NULL,
		created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
	);
	-- A message's latest preview and work view: replaced, not appended.
	CREATE UNIQUE INDEX cluster_stream_latest ON cluster_stream (message_id, kind) WHERE message_id <> '';
	CREATE INDEX cluster_stream_lane ON cluster_stream (session_key, id);
	CREATE UNLOGGED TABLE cluster_calls (
		id          bigserial PRIMARY KEY,
		session_key text NOT NULL,
		op          text NOT NULL,
		body        bytea NOT NULL,
		caller      text NOT NULL,
		taken_by    text NOT NULL DEFAULT '',
		reply       bytea,
		created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
	);`,
}

// SchemaVersion is the cluster schema version this build applies.
var SchemaVersion = len(migrations)

// migrationLock is the advisory lock key that serialises nodes migrating at
// the same time ("gwclustr" in ASCII).
const migrationLock = 0x6777636c75737472

// Migrate brings the cluster tables up to SchemaVersion in one transaction.
// It is idempotent and safe to run from several nodes at once; a database
// from a newer build is an error rather than something to guess about.
func Migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cluster: migrate: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := migrateTx(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cluster: migrate: commit: %w", err)
	}
	return nil
}

func migrateTx(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("cluster: migrate: lock: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS cluster_schema (version integer NOT NULL)`); err != nil {
		return fmt.Errorf("cluster: migrate: schema table: %w", err)
	}
	var version int
	err := tx.QueryRowContext(ctx, `SELECT version FROM cluster_schema`).Scan(&version)
	if err == sql.ErrNoRows {
		_, err = tx.ExecContext(ctx, `INSERT INTO cluster_schema (version) VALUES (0)`)
	}
	if err != nil {
		return fmt.Errorf("cluster: migrate: read version: %w", err)
	}
	if version > len(migrations) {
		return fmt.Errorf("cluster: database schema version %d is newer than this build's %d", version, len(migrations))
	}
	for i := version; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("cluster: migration %d: %w", i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE cluster_schema SET version = $1`, len(migrations)); err != nil {
		return fmt.Errorf("cluster: migrate: write version: %w", err)
	}
	return nil
}
