package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
)

// createAtVersion makes a database at schema version k the way an older
// gatewayd left it; from version 1 on it holds one transcript row.
func createAtVersion(t *testing.T, path string, k int) {
	t.Helper()
	ctx := context.Background()
	if k == 0 {
		if err := os.WriteFile(path, nil, 0o600); err != nil { // an empty file
			t.Fatal(err)
		}
		return
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := migrate(ctx, conn, k); err != nil {
		t.Fatalf("migrate to %d: %v", k, err)
	}
	_, err = conn.ExecContext(ctx, `
		INSERT INTO sessions (id, session_key, generation, started_at) VALUES (1, 'old', 1, 1);
		INSERT INTO gateway_routing (session_key, platform, kind, chat_id, session_id, codex_thread_id, binding,
			created_at, updated_at, last_active_at) VALUES ('old', 'telegram', 'dm', '1', 1, 'th-old', 'confirmed', 1, 1, 1);
		INSERT INTO sessions (id, session_key, generation, started_at) VALUES (2, 'v1:discord:channel:5:user:42', 1, 1);
		INSERT INTO gateway_routing (session_key, platform, kind, chat_id, session_id,
			created_at, updated_at, last_active_at) VALUES ('v1:discord:channel:5:user:42', 'discord', 'channel', '5', 2, 1, 1, 1);
		INSERT INTO messages (session_id, session_key, role, text, turn_id, created_at)
			VALUES (1, 'old', 'user', 'legacy amber text', 'turn-old', 1);`)
	if err != nil {
		t.Fatal(err)
	}
	if k >= 4 { // from version 4 on, gatewayd writes the lane's user itself
		if _, err := conn.ExecContext(ctx, `UPDATE gateway_routing SET user_id = '42'
			WHERE session_key = 'v1:discord:channel:5:user:42'`); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMigrationsFromEachVersion(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "SQLite's migration history (PostgreSQL starts at its own version 1)")
	ctx := context.Background()
	for k := 0; k <= len(migrations); k++ {
		t.Run(fmt.Sprintf("from version %d", k), func(t *testing.T) {
			path := testDBPath(t)
			createAtVersion(t, path, k)
			s := openAt(t, path, Options{})
			if v, err := schemaVersion(ctx, s.readDB); err != nil || v != len(migrations) {
				t.Fatalf("schema version = %d (%v), want %d", v, err, len(migrations))
			}
			if k > 0 {
				l, err := s.Lane(ctx, "old")
				if err != nil || l.ThreadID != "th-old" || l.Binding != BindingConfirmed {
					t.Fatalf("old lane after migration = %+v, %v", l, err)
				}
				if hits, err := s.Search(ctx, "legacy", 10); err != nil || len(hits) != 1 {
					t.Fatalf("old row not searchable after migration: %v %v", hits, err)
				}
				// A per-user lane written before routing had user_id.
				pu, err := s.Lane(ctx, "v1:discord:channel:5:user:42")
				if err != nil || pu.UserID != "42" || l.UserID != "" {
					t.Fatalf("lane users after migration = %q, %q (%v); want 42 back-filled from the key, and none", pu.UserID, l.UserID, err)
				}
				// Lanes from before projects work in codex.cwd, and can choose one.
				if l.Project != "" {
					t.Fatalf("old lane's project after migration = %q, want none", l.Project)
				}
				if err := s.SetProject(ctx, "old", "api"); err != nil {
					t.Fatalf("SetProject on a migrated lane: %v", err)
				}
				if l, err := s.Lane(ctx, "old"); err != nil || l.Project != "api" || l.ThreadID != "th-old" {
					t.Fatalf("migrated lane after SetProject = %+v, %v", l, err)
				}
				// A thread bound before lane_threads (23) existed is still
				// the old lane's once it lets go of it.
				if _, err := s.ResetLane(ctx, "old", "reset"); err != nil {
					t.Fatal(err)
				}
				if claim, err := s.ThreadClaim(ctx, "th-old", "other"); k < 23 && (err != nil || claim != (ThreadClaim{Lane: "old"})) {
					t.Fatalf("ThreadClaim of a migrated lane's thread = %+v, %v; want released by old", claim, err)
				}
			}
			l := mustEnsure(t, s, "new")
			res, err := s.CommitTurn(ctx, CompletedTurn{SessionKey: l.SessionKey, Generation: l.Generation, TurnID: "t1",
				UserText: "fresh words", AssistantText: "ok", Reply: &OutboxMessage{Text: "ok"}})
			if err != nil || res.OutboxID == 0 {
				t.Fatalf("CommitTurn on migrated db = %+v, %v", res, err)
			}
			if hits, _ := s.Search(ctx, "fresh", 10); len(hits) != 1 {
				t.Fatalf("new row not searchable: %v", hits)
			}
			if err := s.RecordPart(ctx, res.OutboxID, 0, "pm-0"); err != nil {
				t.Fatalf("RecordPart on migrated db: %v", err)
			}
			due, err := s.DueOutbox(ctx, s.now(), 0)
			if err != nil || len(due) != 1 || due[0].OutKind != OutboxReply || fmt.Sprint(due[0].SentParts) != "[pm-0]" {
				t.Fatalf("DueOutbox on migrated db = %+v, %v", due, err)
			}
		})
	}
}

func TestMigrationRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "PRAGMA user_version (TestPostgresRefusesNewerSchema)")
	path := testDBPath(t)
	createAtVersion(t, path, len(migrations))
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", len(migrations)+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(context.Background(), path, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open on a newer schema err = %v, want a refusal", err)
	}
}

// TestFailedMigrationChangesNothing appends a broken migration: Open fails
// and neither the version nor the migration's first statement sticks. It
// is the store suite's one serial test: it replaces the package's
// migrations, which every other (parallel) test's Open reads, and parallel
// tests only start once the serial ones are done.
func TestFailedMigrationChangesNothing(t *testing.T) {
	sqliteOnly(t, "SQLite's migration history")
	path := testDBPath(t)
	createAtVersion(t, path, 1)
	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = append(append([]string{}, saved...), "CREATE TABLE half_done (x); THIS IS NOT SQL;")
	if _, err := Open(context.Background(), path, Options{}); err == nil {
		t.Fatal("Open with a broken migration succeeded")
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version, tables int
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil || version != 1 {
		t.Fatalf("version after failed migration = %d (%v), want 1", version, err)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM sqlite_master WHERE name IN ('half_done', 'outbox', 'messages_fts')").Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("%d tables of the failed migrations exist (%v)", tables, err)
	}
}
