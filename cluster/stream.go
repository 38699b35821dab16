package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// A lane's stream across nodes. A request held by a node that does not own
// its lane would otherwise get only the answer the owner records: the
// owner also writes what it shows its own requests (the reply as it grows,
// the work view, lane notices with their approvals and questions) to
// cluster_stream and NOTIFYs StreamChannel with the lane's session key;
// the nodes holding requests on that lane read what is new for them.
//
// The table stays small by construction: a message's preview and work view
// are one row each, replaced as they change and deleted with the answer;
// lane events (notices) are appended and pruned after StreamKeep.
//
// Calls go the other way: a node asked for something only the lane's owner
// holds (its pending questions, an answer to one) writes a call to
// cluster_calls and NOTIFYs CallChannel; the owner takes it, runs it and
// writes the reply, NOTIFYing CallReplyChannel.

// Channels of the stream and the calls (NOTIFY payloads: a session key,
// a call id).
const (
	StreamChannel    = "gatewayd_stream"
	CallChannel      = "gatewayd_call"
	CallReplyChannel = "gatewayd_call_reply"
)

// StreamKeep is how long a lane event stays readable; readers poll at
// least every few seconds, so only a node long cut off misses one.
const StreamKeep = 10 * time.Minute

// EndKind is the kind of the event that ends a message's stream: its
// preview and work view are deleted, not written.
const EndKind = "end"

// StreamEvent is one event of a lane's stream.
type StreamEvent struct {
	ID         int64
	SessionKey string
	// MessageID is the message the event streams for: its latest of Kind
	// replaces the one before. "" for a lane event, which is appended.
	MessageID string
	Kind      string
	Body      []byte
}

// Stream reads and writes the relay's tables for this node.
type Stream struct {
	db   *sql.DB
	node string
}

// NewStream is the relay of node nodeID on db.
func NewStream(db *sql.DB, nodeID string) *Stream { return &Stream{db: db, node: nodeID} }

// Publish writes events in one transaction, in order, and wakes every
// node once per lane.
func (s *Stream) Publish(ctx context.Context, events []StreamEvent) error {
	if len(events) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cluster: publish stream: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	lanes := map[string]bool{}
	for _, ev := range events {
		if err := s.write(ctx, tx, ev); err != nil {
			return fmt.Errorf("cluster: publish stream: %w", err)
		}
		if ev.Kind != EndKind && !lanes[ev.SessionKey] {
			lanes[ev.SessionKey] = true
			if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, StreamChannel, ev.SessionKey); err != nil {
				return fmt.Errorf("cluster: publish stream: notify: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cluster: publish stream: %w", err)
	}
	return nil
}

func (s *Stream) write(ctx context.Context, tx *sql.Tx, ev StreamEvent) error {
	if ev.Body == nil {
		ev.Body = []byte{}
	}
	switch {
	case ev.Kind == EndKind:
		_, err := tx.ExecContext(ctx, `DELETE FROM cluster_stream WHERE message_id = $1 AND session_key = $2`,
			ev.MessageID, ev.SessionKey)
		return err
	case ev.MessageID == "":
		_, err := tx.ExecContext(ctx, `INSERT INTO cluster_stream (session_key, kind, body, node_id)
			VALUES ($1, $2, $3, $4)`, ev.SessionKey, ev.Kind, ev.Body, s.node)
		return err
	}
	// A new id on every change, so readers past the old one see it.
	_, err := tx.ExecContext(ctx, `INSERT INTO cluster_stream (session_key, message_id, kind, body, node_id)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (message_id, kind) WHERE message_id <> ''
		DO UPDATE SET id = nextval('cluster_stream_id_seq'), body = excluded.body,
			session_key = excluded.session_key, node_id = excluded.node_id, created_at = clock_timestamp()`,
		ev.SessionKey, ev.MessageID, ev.Kind, ev.Body, s.node)
	return err
}

// Position is the id of the newest event: a request registered now is
// shown the lane events after it.
func (s *Stream) Position(ctx context.Context) (int64, error) {
	var id int64
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM cluster_stream`).Scan(&id); err != nil {
		return 0, fmt.Errorf("cluster: stream position: %w", err)
	}
	return id, nil
}

// Since returns up to limit events of the lane after id after, oldest
// first, written by other nodes (this node's requests had its own).
func (s *Stream) Since(ctx context.Context, sessionKey string, after int64, limit int) ([]StreamEvent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, message_id, kind, body FROM cluster_stream
		WHERE session_key = $1 AND id > $2 AND node_id <> $3 ORDER BY id LIMIT $4`, sessionKey, after, s.node, limit)
	if err != nil {
		return nil, fmt.Errorf("cluster: read stream: %w", err)
	}
	defer rows.Close()
	var out []StreamEvent
	for rows.Next() {
		ev := StreamEvent{SessionKey: sessionKey}
		if err := rows.Scan(&ev.ID, &ev.MessageID, &ev.Kind, &ev.Body); err != nil {
			return nil, fmt.Errorf("cluster: read stream: %w", err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster: read stream: %w", err)
	}
	return out, nil
}

// Prune deletes what nobody needs any more: lane events older than keep,
// a message's events not replaced for keep (its owner died before the
// answer), and calls older than keep.
func (s *Stream) Prune(ctx context.Context, keep time.Duration) error {
	secs := keep.Seconds()
	if _, err := s.db.ExecContext(ctx, `DELETE FROM cluster_stream
		WHERE created_at < clock_timestamp() - make_interval(secs => $1)`, secs); err != nil {
		return fmt.Errorf("cluster: prune stream: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM cluster_calls
		WHERE created_at < clock_timestamp() - make_interval(secs => $1)`, secs); err != nil {
		return fmt.Errorf("cluster: prune calls: %w", err)
	}
	return nil
}

// ErrNoOwner is Ask's answer when no other live node holds the lane's
// lease: the caller is the owner, or nobody is yet.
var ErrNoOwner = errors.New("cluster: no other node owns the lane")

// Call is a call a node took to run for a lane it owns.
type Call struct {
	ID         int64
	SessionKey string
	Op         string
	Body       []byte
}

// Ask writes a call to the owner of the lane and wakes it; the call's id
// is what Replied looks for.
func (s *Stream) Ask(ctx context.Context, sessionKey, op string, body []byte) (int64, error) {
	if body == nil {
		body = []byte{}
	}
	var id int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO cluster_calls (session_key, op, body, caller)
		SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM cluster_leases
			WHERE name = $5 AND holder <> '' AND holder <> $4 AND expires_at > cluster_now())
		RETURNING id`, sessionKey, op, body, s.node, LanePrefix+sessionKey).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, ErrNoOwner
	case err != nil:
		return 0, fmt.Errorf("cluster: call the lane's owner: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, CallChannel, fmt.Sprint(id)); err != nil {
		return 0, fmt.Errorf("cluster: call the lane's owner: notify: %w", err)
	}
	return id, nil
}

// TakeCalls takes the calls not yet taken of the lanes owns says this
// node serves, younger than maxAge (an older one's caller has given up):
// each is run by one node only. A taken call's body is cleared (it may
// hold a secret answer).
func (s *Stream) TakeCalls(ctx context.Context, owns func(sessionKey string) bool, maxAge time.Duration) ([]Call, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, session_key FROM cluster_calls
		WHERE taken_by = '' AND created_at > clock_timestamp() - make_interval(secs => $1) ORDER BY id`, maxAge.Seconds())
	if err != nil {
		return nil, fmt.Errorf("cluster: read calls: %w", err)
	}
	var mine []int64
	for rows.Next() {
		var id int64
		var key string
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return nil, fmt.Errorf("cluster: read calls: %w", err)
		}
		if owns(key) {
			mine = append(mine, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster: read calls: %w", err)
	}
	var out []Call
	for _, id := range mine {
		c := Call{ID: id}
		err := s.db.QueryRowContext(ctx, `UPDATE cluster_calls AS c SET taken_by = $1, body = ''::bytea
			FROM (SELECT id, body FROM cluster_calls WHERE id = $2 AND taken_by = '' FOR UPDATE) AS old
			WHERE c.id = old.id
			RETURNING c.session_key, c.op, old.body`, s.node, id).Scan(&c.SessionKey, &c.Op, &c.Body)
		switch {
		case errors.Is(err, sql.ErrNoRows): // another node took it
		case err != nil:
			return out, fmt.Errorf("cluster: take call %d: %w", id, err)
		default:
			out = append(out, c)
		}
	}
	return out, nil
}

// Reply writes the reply to call id and wakes the caller.
func (s *Stream) Reply(ctx context.Context, id int64, reply []byte) error {
	if reply == nil {
		reply = []byte{}
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE cluster_calls SET reply = $1 WHERE id = $2`, reply, id); err != nil {
		return fmt.Errorf("cluster: reply to call %d: %w", id, err)
	}
	if _, err := s.db.ExecContext(ctx, `SELECT pg_notify($1, $2)`, CallReplyChannel, fmt.Sprint(id)); err != nil {
		return fmt.Errorf("cluster: reply to call %d: notify: %w", id, err)
	}
	return nil
}

// Replied returns the reply to call id once it is written, and deletes
// the call then.
func (s *Stream) Replied(ctx context.Context, id int64) ([]byte, bool, error) {
	var reply []byte
	err := s.db.QueryRowContext(ctx, `DELETE FROM cluster_calls WHERE id = $1 AND reply IS NOT NULL RETURNING reply`, id).
		Scan(&reply)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("cluster: read reply to call %d: %w", id, err)
	}
	return reply, true, nil
}

// Withdraw deletes call id, answered or not: its caller gave up.
func (s *Stream) Withdraw(ctx context.Context, id int64) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM cluster_calls WHERE id = $1`, id); err != nil {
		return fmt.Errorf("cluster: withdraw call %d: %w", id, err)
	}
	return nil
}
