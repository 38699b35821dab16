package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// migrations is the ordered schema history. The schema version stored in
// PRAGMA user_version is the number of migrations applied. Append only:
// never edit a migration that has shipped, add a new one at the end.
//
// Times are INTEGER Unix nanoseconds (0 = unset).
var migrations = []string{
	// 1: lanes, sessions, transcript, inbox, cursors.
	`
CREATE TABLE sessions (
	id          INTEGER PRIMARY KEY,
	session_key TEXT    NOT NULL,
	generation  INTEGER NOT NULL,
	parent_id   INTEGER REFERENCES sessions(id),
	started_at  INTEGER NOT NULL,
	ended_at    INTEGER NOT NULL DEFAULT 0,
	end_reason  TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX sessions_by_key ON sessions(session_key, generation, id);

CREATE TABLE gateway_routing (
	session_key     TEXT PRIMARY KEY,
	platform        TEXT    NOT NULL,
	kind            TEXT    NOT NULL,
	chat_id         TEXT    NOT NULL,
	topic_id        TEXT    NOT NULL DEFAULT '',
	session_id      INTEGER NOT NULL REFERENCES sessions(id),
	codex_thread_id TEXT    NOT NULL DEFAULT '',
	binding         TEXT    NOT NULL DEFAULT ''
	                CHECK (binding IN ('', 'pending', 'confirmed', 'lost')),
	binding_reason  TEXT    NOT NULL DEFAULT '',
	generation      INTEGER NOT NULL DEFAULT 1,
	turns           INTEGER NOT NULL DEFAULT 0,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	last_active_at  INTEGER NOT NULL,
	meta            TEXT    NOT NULL DEFAULT '{}'
) WITHOUT ROWID;
CREATE INDEX routing_by_activity ON gateway_routing(last_active_at DESC);

CREATE TABLE messages (
	id                  INTEGER PRIMARY KEY,
	session_id          INTEGER NOT NULL REFERENCES sessions(id),
	session_key         TEXT    NOT NULL,
	role                TEXT    NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
	text                TEXT    NOT NULL,
	turn_id             TEXT    NOT NULL,
	platform_message_id TEXT    NOT NULL DEFAULT '',
	status              TEXT    NOT NULL DEFAULT '',
	total_tokens        INTEGER NOT NULL DEFAULT 0,
	context_window      INTEGER NOT NULL DEFAULT 0,
	outbox_id           INTEGER NOT NULL DEFAULT 0,
	created_at          INTEGER NOT NULL,
	UNIQUE (session_key, turn_id, role)
);
CREATE INDEX messages_by_session ON messages(session_id, id);

CREATE TABLE inbox (
	id          INTEGER PRIMARY KEY,
	platform    TEXT    NOT NULL,
	message_id  TEXT,   -- NULL when the platform gave none: never deduplicated
	session_key TEXT    NOT NULL,
	sender_id   TEXT    NOT NULL DEFAULT '',
	sender_name TEXT    NOT NULL DEFAULT '',
	text        TEXT    NOT NULL,
	received_at INTEGER NOT NULL,
	state       TEXT    NOT NULL DEFAULT 'received'
	            CHECK (state IN ('received', 'processing', 'done', 'failed', 'ignored')),
	updated_at  INTEGER NOT NULL,
	UNIQUE (platform, message_id)
);
CREATE INDEX inbox_open ON inbox(id) WHERE state IN ('received', 'processing');

CREATE TABLE cursors (
	name       TEXT PRIMARY KEY,
	value      TEXT    NOT NULL,
	updated_at INTEGER NOT NULL
) WITHOUT ROWID;
`,
	// 2: full-text search over the transcript, kept in sync by triggers.
	// The rebuild indexes rows written before this migration.
	`
CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='messages', content_rowid='id');
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
	INSERT INTO messages_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
	INSERT INTO messages_fts(rowid, text) VALUES (new.id, new.text);
END;
INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
`,
	// 3: outbox, turn journal, compactions.
	`
CREATE TABLE outbox (
	id                  INTEGER PRIMARY KEY,
	session_key         TEXT    NOT NULL,
	platform            TEXT    NOT NULL,
	kind                TEXT    NOT NULL DEFAULT '',
	chat_id             TEXT    NOT NULL DEFAULT '',
	topic_id            TEXT    NOT NULL DEFAULT '',
	user_id             TEXT    NOT NULL DEFAULT '',
	text                TEXT    NOT NULL,
	reply_to            TEXT    NOT NULL DEFAULT '',
	edit_id             TEXT    NOT NULL DEFAULT '',
	state               TEXT    NOT NULL DEFAULT 'pending'
	                    CHECK (state IN ('pending', 'sent', 'failed')),
	attempts            INTEGER NOT NULL DEFAULT 0,
	next_attempt_at     INTEGER NOT NULL,
	platform_message_id TEXT    NOT NULL DEFAULT '',
	last_error          TEXT    NOT NULL DEFAULT '',
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL
);
CREATE INDEX outbox_pending ON outbox(next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX outbox_pending_by_lane ON outbox(session_key, id) WHERE state = 'pending';

CREATE TABLE turn_journal (
	session_key TEXT PRIMARY KEY,
	generation  INTEGER NOT NULL,
	inbound_id  INTEGER NOT NULL DEFAULT 0,
	thread_id   TEXT    NOT NULL DEFAULT '',
	turn_id     TEXT    NOT NULL DEFAULT '',
	text        TEXT    NOT NULL DEFAULT '',
	started_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE compactions (
	id            INTEGER PRIMARY KEY,
	session_key   TEXT    NOT NULL,
	session_id    INTEGER NOT NULL REFERENCES sessions(id),
	thread_id     TEXT    NOT NULL,
	tokens_before INTEGER NOT NULL,
	tokens_after  INTEGER NOT NULL,
	created_at    INTEGER NOT NULL
);
CREATE INDEX compactions_by_key ON compactions(session_key, id);
`,
	// 4: delivery identity. outbox_parts records each part of a split
	// reply the platform accepted, so a retry (after a crash too) sends
	// only the rest. The outbox row carries what the reply is (out_kind)
	// and its turn, so a restart labels it as the first attempt did. The
	// routing row carries the lane's user (per-user lanes); rows written
	// before have it back-filled from the session key's ":user:" suffix.
	`
CREATE TABLE outbox_parts (
	outbox_id           INTEGER NOT NULL REFERENCES outbox(id) ON DELETE CASCADE,
	part                INTEGER NOT NULL CHECK (part >= 0),
	platform_message_id TEXT    NOT NULL,
	sent_at             INTEGER NOT NULL,
	PRIMARY KEY (outbox_id, part)
) WITHOUT ROWID;

ALTER TABLE outbox ADD COLUMN out_kind TEXT NOT NULL DEFAULT 'notice'
	CHECK (out_kind IN ('notice', 'reply'));
ALTER TABLE outbox ADD COLUMN thread_id   TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN turn_id     TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN turn_status TEXT NOT NULL DEFAULT '';

ALTER TABLE gateway_routing ADD COLUMN user_id TEXT NOT NULL DEFAULT '';
UPDATE gateway_routing SET user_id = substr(session_key, instr(session_key, ':user:') + length(':user:'))
	WHERE instr(session_key, ':user:') > 0;
`,
	// 5: a cut-off turn stays journaled, marked announced, until /retry
	// runs it or the lane's next turn replaces it: its text must outlive
	// the restart that announced it.
	`
ALTER TABLE turn_journal ADD COLUMN cut_off INTEGER NOT NULL DEFAULT 0;
`,
	// 6: held outbox rows and recorded API answers. A held row
	// was taken by a platform that has nobody to give it to yet (the API
	// lane with no request open); it is not due until the platform asks for
	// it again. The state CHECK cannot be altered in place, hence a column.
	// answers keeps the body an API message was answered with, so a repeated
	// message id is answered with the same bytes.
	`
ALTER TABLE outbox ADD COLUMN held INTEGER NOT NULL DEFAULT 0 CHECK (held IN (0, 1));
CREATE INDEX outbox_held_by_lane ON outbox(session_key) WHERE state = 'pending' AND held = 1;

CREATE TABLE answers (
	session_key TEXT    NOT NULL,
	message_id  TEXT    NOT NULL,
	body        BLOB    NOT NULL,
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (session_key, message_id)
) WITHOUT ROWID;
`,
	// 7: the lane's project: the name of a configured working
	// directory, '' for codex.cwd. It belongs to the lane, not to a
	// session or a thread, so /new and rotation keep it.
	`
ALTER TABLE gateway_routing ADD COLUMN project TEXT NOT NULL DEFAULT '';
`,
	// 8: the files a message came with (files in): a JSON array
	// of the attachments stored under <state_dir>/files before the row was
	// written, '' for none, so a restart queues them with the message.
	`
ALTER TABLE inbox ADD COLUMN attachments TEXT NOT NULL DEFAULT '';
`,
	// 9: files out: an outbox row of kind file carries the
	// snapshot the send_file tool (or an image codex generated) copied
	// under <state_dir>/files/<lane>/out, its name, media type and size;
	// its text is the caption. out_kind's CHECK (migration 4) cannot be
	// widened without rebuilding the table outbox_parts refers to, so a
	// file row is stored as out_kind 'reply' (it is part of the turn's
	// answer) and told apart by its file_path.
	`
ALTER TABLE outbox ADD COLUMN file_path TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN file_name TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN file_mime TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN file_size INTEGER NOT NULL DEFAULT 0;
`,
	// 10: the lane's own choices: how much of Codex's work it
	// sees (/verbose), and its model and reasoning effort (/model, /effort).
	// '' means the configured default. Like the project they belong to the
	// lane, so /new, rotation and restarts keep them.
	`
ALTER TABLE gateway_routing ADD COLUMN verbose TEXT NOT NULL DEFAULT '';
ALTER TABLE gateway_routing ADD COLUMN model TEXT NOT NULL DEFAULT '';
ALTER TABLE gateway_routing ADD COLUMN effort TEXT NOT NULL DEFAULT '';
`,
	// 11: each turn's token usage on its assistant row, beside the thread
	// total (total_tokens) and the window (context_window) kept since 1:
	// what the turn spent by kind, and the context in use after it.
	`
ALTER TABLE messages ADD COLUMN turn_tokens         INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN input_tokens        INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN cached_input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN output_tokens       INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN reasoning_tokens    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN context_tokens      INTEGER NOT NULL DEFAULT 0;
`,
	// 12: gateway-wide state that must outlive a restart, by name (issue
	// 13: the usage-limit pause, its reset time and the lanes told).
	`
CREATE TABLE gateway_state (
	name       TEXT PRIMARY KEY,
	value      TEXT NOT NULL,
	updated_at INTEGER NOT NULL
) WITHOUT ROWID;
`,
	// 13: a lane's transcript across all its sessions, newest first and
	// paged by id (the console's TranscriptPage). Without it SQLite sorts
	// every message of the lane for each page.
	`
CREATE INDEX messages_by_key ON messages(session_key, id);
`,
	// 14: the due-outbox read (DueOutbox, run after every commit) walks
	// pending rows in id order. With a bound "now" SQLite preferred the
	// rowid order over outbox_pending and scanned every row ever sent
	// (2.5 ms at 6,000 rows, growing); this index gives it the order and
	// only the pending rows.
	`
CREATE INDEX outbox_due ON outbox(id) WHERE state = 'pending';
`,
	// 15: a platform's channel index: the channels the bot has
	// a conversation in, one row each, with the newest message id handled
	// there. Backfill after a reconnect reads it; on several nodes each
	// writes only its own rows, so no node's channel is lost to another's
	// read-modify-write, and the message id only grows.
	`
CREATE TABLE channel_index (
	platform        TEXT    NOT NULL,
	channel_id      TEXT    NOT NULL,
	engaged         INTEGER NOT NULL DEFAULT 0 CHECK (engaged IN (0, 1)),
	last_message_id INTEGER NOT NULL DEFAULT 0,
	seen_at         INTEGER NOT NULL,
	PRIMARY KEY (platform, channel_id)
) WITHOUT ROWID;
CREATE INDEX channel_index_by_seen ON channel_index(platform, seen_at DESC);
`,
	// 16: the lane's turn to retry, apart from the journal,
	// whose next turn replaced a cut-off entry, so /retry after another
	// turn ran that turn instead. Carried over: a cut-off entry still in
	// the journal, else a lane whose last turn timed out.
	`
CREATE TABLE retry_turns (
	session_key TEXT    PRIMARY KEY,
	generation  INTEGER NOT NULL,
	inbound_id  INTEGER NOT NULL DEFAULT 0,
	text        TEXT    NOT NULL,
	reason      TEXT    NOT NULL CHECK (reason IN ('cut_off', 'timed_out')),
	stopped_at  INTEGER NOT NULL,
	retried_at  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
` + retryTurnsCarryOver,
	// 17: /fork's answer names the lane it made: the API
	// returns it as "fork", also when the answer is delivered after a
	// restart.
	`
ALTER TABLE outbox ADD COLUMN fork_lane TEXT NOT NULL DEFAULT '';
`,
	// 18: what was said in a shared room between the bot's turns (issue
	// 28, lanes.group_context): kept per lane until the next addressed
	// turn takes it; a redelivered message is one row (platform, id).
	`
CREATE TABLE room_context (
	id          INTEGER PRIMARY KEY,
	session_key TEXT    NOT NULL,
	platform    TEXT    NOT NULL,
	message_id  TEXT    NOT NULL,
	sender      TEXT    NOT NULL,
	text        TEXT    NOT NULL,
	received_at INTEGER NOT NULL,
	UNIQUE (platform, message_id)
);
CREATE INDEX room_context_lane ON room_context(session_key, id);
`,
	// 19: the user a reply pings (lanes.notify_after): a long
	// turn's answer notifies whoever asked, also when delivered after a
	// restart.
	`
ALTER TABLE outbox ADD COLUMN ping TEXT NOT NULL DEFAULT '';
`,
	// 20: the lane's collaboration mode (/plan): "plan", or
	// "default" once /plan off left it; "" when never chosen.
	`
ALTER TABLE gateway_routing ADD COLUMN collab_mode TEXT NOT NULL DEFAULT '';
`,
	// 21: triggers: what started an inbound row that no one
	// typed (a schedule's firing, a webhook), the lane's time zone (/tz),
	// and the schedules (/at, /every). A firing is an inbox row whose
	// message id names the schedule and the due time, so it runs once.
	`
ALTER TABLE inbox ADD COLUMN origin TEXT NOT NULL DEFAULT '';
ALTER TABLE gateway_routing ADD COLUMN timezone TEXT NOT NULL DEFAULT '';
CREATE TABLE schedules (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	session_key  TEXT    NOT NULL,
	rule         TEXT    NOT NULL, -- schedule.Rule's text; '' for a one-off (/at)
	prompt       TEXT    NOT NULL,
	timezone     TEXT    NOT NULL,
	creator_id   TEXT    NOT NULL DEFAULT '',
	creator_name TEXT    NOT NULL DEFAULT '',
	next_at      INTEGER NOT NULL, -- the due time of the next firing
	created_at   INTEGER NOT NULL,
	fired        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX schedules_due ON schedules(next_at);
CREATE INDEX schedules_lane ON schedules(session_key, id);
`,
	// 22: webhook bodies seen. A GitHub-style delivery signs
	// only its body, so a captured one could be sent again under a new
	// delivery id: its body's SHA-256 is kept for webhooks.replay_window
	// with the delivery id that first brought it, and older rows pruned.
	`
CREATE TABLE webhook_bodies (
	hook        TEXT    NOT NULL,
	body_sha256 TEXT    NOT NULL,
	delivery_id TEXT    NOT NULL,
	received_at INTEGER NOT NULL,
	PRIMARY KEY (hook, body_sha256)
) WITHOUT ROWID;
CREATE INDEX webhook_bodies_by_age ON webhook_bodies(received_at);
`,
	// 23: every thread a lane was ever bound to, so /attach can
	// refuse a thread another lane let go of (/reset, /new, rotation, a
	// replaced thread): its rollout is that conversation's. Filled from
	// what the store still remembers of each lane's threads.
	`
CREATE TABLE lane_threads (
	thread_id   TEXT    NOT NULL,
	session_key TEXT    NOT NULL,
	bound_at    INTEGER NOT NULL,
	PRIMARY KEY (thread_id, session_key)
) WITHOUT ROWID;
` + laneThreadsCarryOver("INSERT OR IGNORE", ""),
	// 24: why a schedule stopped firing (its maker is no longer
	// allowed); '' while it fires.
	`
ALTER TABLE schedules ADD COLUMN paused TEXT NOT NULL DEFAULT '';
`,
	// 25: usage per lane and per sender over a day or a month
	// (lanes.budget_tokens_per_day, /status): each assistant row names
	// the sender whose message started the turn, and the turns' rows are
	// found by lane and time without reading the lane's whole transcript.
	`
ALTER TABLE messages ADD COLUMN sender_id TEXT NOT NULL DEFAULT '';
` + usageIndex,
	// 26: the thread whose rollout holds each turn ('' for a turn codex
	// never started, and for rows from before): a cluster node taking a
	// lane over checks the shipped rollout covers the lane's committed
	// turns, and rebuilds those it lacks from these rows.
	messagesThread,
	// 27: what a message replied to, and whether the platform said its
	// sender administers the place: the node that runs the lane, maybe
	// not the one that recorded the message, reads them from the row to
	// see which question a typed answer answers and who may answer it.
	inboxAnswerContext,
}

// inboxAnswerContext is migration 27 (PostgreSQL's 15).
const inboxAnswerContext = `
ALTER TABLE inbox ADD COLUMN reply_to TEXT NOT NULL DEFAULT '';
ALTER TABLE inbox ADD COLUMN sender_admin INTEGER NOT NULL DEFAULT 0;
`

// messagesThread is migration 26 (PostgreSQL's 14). The index serves
// ThreadTurns, which reads a thread's last turns from the end, whatever
// the size of the lane's transcript.
const messagesThread = `
ALTER TABLE messages ADD COLUMN thread_id TEXT NOT NULL DEFAULT '';
CREATE INDEX messages_by_thread ON messages(thread_id, id) WHERE thread_id <> '';
`

// usageIndex serves LaneUsage: the assistant rows, which carry the
// turns' tokens, by lane and time.
const usageIndex = `CREATE INDEX messages_usage_by_lane ON messages(session_key, created_at) WHERE role = 'assistant';
`

// laneThreadsCarryOver fills lane_threads from the threads the store
// recorded before it: the lanes' current (or lost) bindings, the turns'
// journal, the outbox's replies and the compactions. insert and conflict
// are the dialect's way of skipping a row already there.
func laneThreadsCarryOver(insert, conflict string) string {
	var b strings.Builder
	for _, src := range []string{
		"SELECT codex_thread_id, session_key, updated_at FROM gateway_routing WHERE codex_thread_id <> ''",
		"SELECT thread_id, session_key, started_at FROM turn_journal WHERE thread_id <> ''",
		"SELECT thread_id, session_key, MIN(created_at) FROM outbox WHERE thread_id <> '' GROUP BY thread_id, session_key",
		"SELECT thread_id, session_key, MIN(created_at) FROM compactions WHERE thread_id <> '' GROUP BY thread_id, session_key",
	} {
		fmt.Fprintf(&b, "%s INTO lane_threads (thread_id, session_key, bound_at) %s %s;\n", insert, src, conflict)
	}
	return b.String()
}

// retryTurnsCarryOver fills retry_turns from what the store had before it
// (SQLite's 16, PostgreSQL's 4). A cut-off entry is newer than any timed
// out turn: the next turn's journal entry would have replaced it.
const retryTurnsCarryOver = `
INSERT INTO retry_turns (session_key, generation, inbound_id, text, reason, stopped_at)
	SELECT session_key, generation, inbound_id, text, 'cut_off', started_at FROM turn_journal WHERE cut_off = 1;
INSERT INTO retry_turns (session_key, generation, inbound_id, text, reason, stopped_at)
	SELECT r.session_key, r.generation, 0, u.text, 'timed_out', a.created_at
	FROM gateway_routing r
	JOIN messages a ON a.id = (SELECT MAX(m.id) FROM messages m WHERE m.session_id = r.session_id AND m.role = 'assistant')
	JOIN messages u ON u.session_key = a.session_key AND u.turn_id = a.turn_id AND u.role = 'user'
	WHERE a.status = 'timed_out'
	ON CONFLICT (session_key) DO NOTHING;
`

// migrate brings the schema to version target (normally len(migrations))
// in one IMMEDIATE transaction: either every pending migration applies and
// the version is recorded, or nothing changes.
func migrate(ctx context.Context, conn *sql.Conn, target int) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
		}
	}()
	version, err := schemaVersion(ctx, conn)
	if err != nil {
		return err
	}
	if version > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this gatewayd knows (%d); refusing to run an older binary on it",
			version, len(migrations))
	}
	for v := version; v < target; v++ {
		if _, err := conn.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migration %d: %w", v+1, err)
		}
	}
	if target < version {
		return fmt.Errorf("schema version %d is past the requested %d", version, target)
	}
	// Written even when unchanged: the write proves at Open that the
	// database accepts writes. PRAGMA takes no bound parameters; target is
	// an int we control.
	if _, err := conn.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(target)); err != nil {
		return fmt.Errorf("record schema version %d: %w", target, err)
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

func schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
