package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/internal/poll"
)

// The texts of two reads of a takeover's recovery as pg_stat_activity
// shows them while they wait for a lock: the store's Journal, the first
// (gateway.ClusterLanes.RecoverLane), and its Lane, which reads the
// routing row of the lane's cut-off turn before it is told
// (recovery.recoverCutOff); the takeover's restore reads that row first.
const (
	journalRead = "%cut_off FROM turn_journal ORDER BY started_at%"
	laneRead    = "%FROM gateway_routing r JOIN sessions s%"
)

// Two gatewayd nodes on a PostgreSQL server of their own, the real
// app-server, one API lane owned by node-a with a turn held at the model
// and a second message queued behind it. node-a is killed -9; node-b takes
// the lane over and, the moment its recovery reads the database, the
// database stops for 20 s, so that recovery fails: at its first read (the
// journal), and at the read before the cut-off turn is told, whose failure
// the recovery once logged and went on from as if done. Once the database
// is back node-b recovers the lane in place: the same process, the same
// lease (one takeover, its token unchanged); the cut-off turn is told once
// (lanes.auto_retry_cut_off is off: not rerun) and the queued message is
// answered exactly once.
//
// The lease TTL is 60 s, above the outage: with the default 15 s node-b's
// own lease would lapse during it and the lane could be taken again
// instead of recovered in place; this test proves the in-place retry.
func TestProcessClusterOutageDuringTakeoverRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two daemons and stops PostgreSQL for 20 s, twice")
	}
	t.Run("at the journal read", func(t *testing.T) { outageDuringRecovery(t, false) })
	t.Run("at the cut-off turn's lane read", func(t *testing.T) { outageDuringRecovery(t, true) })
}

// outageDuringRecovery is the test, the outage at the journal read or,
// atCutOff, at the read before the cut-off turn is told.
func outageDuringRecovery(t *testing.T, atCutOff bool) {
	const ttl = 60 * time.Second
	const outage = 20 * time.Second
	// Its own server (stopping the shared one would break other tests),
	// durable, as Quit needs.
	srv := pgtest.Start(t, pgtest.Options{Durable: true})
	dsn := srv.NewDatabase(t)
	bin := buildDaemon(t)
	ids := []string{"node-a", "node-b"}
	models := map[string]*gatedModel{}
	nodes := map[string]*clusterProc{}
	for _, id := range ids {
		models[id] = newGatedModel(t)
		nodes[id] = writeClusterNodeWith(t, dsn, id, models[id].Model, map[string]any{
			"cluster": map[string]any{"node_id": id, "lease_ttl": ttl.String()},
		}).start(t, bin)
	}
	for _, id := range ids {
		waitHealthy(t, nodes[id].api, nodes[id].daemonProc)
	}
	a, b := nodes["node-a"], nodes["node-b"]
	lane := laneOwnedBy(t, "outage", "node-a", ids)
	key := apiLaneKey(t, lane)
	db := openTestDB(t, dsn)

	queued := queueBehindHeldTurn(t, a, models["node-a"], db, lane, key)
	a.kill9(t)
	for _, m := range queued {
		m.got = <-m.answer // the connection died with node-a
	}
	taken, lock := stopRecoveryAt(t, db, b, key, ttl, atCutOff)

	// An immediate shutdown: the sessions end at once, the lock with
	// them, never handed on to node-b's read (a fast shutdown ends the
	// lock's session first at times, and the read gets through).
	downAt := time.Now()
	if err := srv.Quit(); err != nil {
		t.Fatal(err)
	}
	_ = lock.Rollback() // its connection ended with the server
	failed := waitLogEvents(t, b.daemonProc, "cluster.recover_failed", laneIs(key))
	if len(failed) == 0 {
		t.Fatalf("node-b logged no cluster.recover_failed for %s with the database stopped under its recovery", key)
	}
	t.Logf("recovery failed %v after the stop: %v", eventTime(t, failed[0]).Sub(downAt).Round(time.Millisecond), failed[0]["error"])
	time.Sleep(outage - time.Since(downAt)) // the outage itself
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	backAt := time.Now()

	var recovered time.Time
	poll.Wait(90*time.Second, b.logged.Wait, func() bool {
		recovered = eventAfter(t, b.daemonProc, "recover.done", nil, backAt)
		return !recovered.IsZero()
	})
	if recovered.IsZero() {
		t.Fatalf("node-b did not recover lane %s within 90 s of the database's return", key)
	}
	failures := len(logEvents(b.daemonProc, "cluster.recover_failed", laneIs(key)))
	t.Logf("database away %v (stopped %v, then its start) under the takeover's recovery, lease_ttl %v: "+
		"%d recovery attempts failed, lane recovered %v after the database was back",
		backAt.Sub(downAt).Round(time.Millisecond), outage, ttl, failures, recovered.Sub(backAt).Round(time.Millisecond))

	checkRecoveredInPlace(t, b, openTestDB(t, dsn), key, taken)
	checkOutageOutcome(t, b, models, openTestDB(t, dsn), lane, key, queued)
}

// stopRecoveryAt has node-b take the lane of the dead node-a and stops
// its recovery at a read, waiting for a lock the returned transaction
// holds: the journal read, or atCutOff the lane read before the cut-off
// turn is told. Table locks order it: the routing table is held while
// node-b takes the lane (its restore reads it), the journal before the
// routing is let go, and for atCutOff the routing again before the
// journal is let go. It returns node-b's cluster.lane_taken event.
func stopRecoveryAt(t *testing.T, db *sql.DB, b *clusterProc, key string, ttl time.Duration, atCutOff bool) (map[string]any, *sql.Tx) {
	t.Helper()
	routing := lockTable(t, db, "gateway_routing")
	expireDeadNode(t, db, "node-a", ttl, key)
	taken := waitLogEvents(t, b.daemonProc, "cluster.lane_taken", laneIs(key))
	if len(taken) == 0 {
		t.Fatalf("node-b did not take lane %s after node-a died", key)
	}
	journal := lockTable(t, db, "turn_journal")
	if err := routing.Rollback(); err != nil {
		t.Fatal(err)
	}
	waitLockWaiter(t, db, journalRead)
	if !atCutOff {
		return taken[0], journal
	}
	routing = lockTable(t, db, "gateway_routing")
	if err := journal.Rollback(); err != nil {
		t.Fatal(err)
	}
	waitLockWaiter(t, db, laneRead)
	return taken[0], routing
}

// eventTime is when a daemon's log event was written.
func eventTime(t *testing.T, e map[string]any) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(e["ts"]))
	if err != nil {
		t.Fatalf("%v: ts: %v", e["event"], err)
	}
	return at
}

// queueBehindHeldTurn answers a first message on the lane through its
// owner n (so the lane has a thread and a shipped rollout to restore),
// then sends a turn the model holds and a message that queues behind it,
// and returns once the held turn is at the model and the queued message
// claimed by n.
func queueBehindHeldTurn(t *testing.T, n *clusterProc, model *gatedModel, db *sql.DB, lane, key string) []*sentMessage {
	t.Helper()
	if w := <-postLane(n, lane, "warm", "warm up", false); w.err != nil || w.code != http.StatusOK {
		t.Fatalf("warming lane %s: %d %v %q", lane, w.code, w.err, w.body)
	}
	if len(waitLogEvents(t, n.daemonProc, "cluster.shipped", laneIs(key))) == 0 {
		t.Fatalf("%s never shipped lane %s's rollout", n.id, key)
	}
	send := func(id, text string) *sentMessage {
		m := &sentMessage{id: id, token: "[token " + id + "]", lane: lane, via: n.id}
		m.answer = postLane(n, lane, id, text+" "+m.token, false)
		return m
	}
	held := send("held", holdMarker+" turn")
	if !poll.Wait(60*time.Second, nil, func() bool { return tokenRequests([]*gatedModel{model}, held.token) > 0 }) {
		t.Fatal("the held turn never reached node-a's model")
	}
	queued := send("queued", "queued message")
	var state string
	// No signal crosses the process boundary: the inbox is asked again.
	poll.Wait(30*time.Second, nil, func() bool {
		err := db.QueryRow(`SELECT state FROM inbox WHERE platform = 'api' AND message_id = $1`, queued.id).Scan(&state)
		return err == nil && state == "processing"
	})
	if state != "processing" {
		t.Fatalf("the queued message's inbox row is %q, want processing (claimed by %s behind the held turn)", state, n.id)
	}
	return []*sentMessage{held, queued}
}

// lockTable takes table's ACCESS EXCLUSIVE lock in a transaction of its
// own: every read of the table waits until the transaction ends.
func lockTable(t *testing.T, db *sql.DB, table string) *sql.Tx {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatalf("lock %s: %v", table, err)
	}
	return tx
}

// expireDeadNode makes the dead node's heartbeat a TTL old and its leases
// expired, as the database would see them a TTL after it died, and wakes
// the live nodes: the takeover starts now instead of after the 60 s TTL
// this test needs. Nothing of the dead node writes any more.
func expireDeadNode(t *testing.T, db *sql.DB, dead string, ttl time.Duration, key string) {
	t.Helper()
	if _, err := db.Exec(`UPDATE cluster_nodes SET heartbeat_at = cluster_now() - 2 * $2 * interval '1 microsecond'
		WHERE node_id = $1`, dead, ttl.Microseconds()); err != nil {
		t.Fatalf("age %s's heartbeat: %v", dead, err)
	}
	if _, err := db.Exec(`UPDATE cluster_leases SET expires_at = cluster_now() WHERE holder = $1`, dead); err != nil {
		t.Fatalf("expire %s's leases: %v", dead, err)
	}
	if _, err := db.Exec(`SELECT pg_notify('gatewayd_inbox', $1)`, key); err != nil {
		t.Fatal(err)
	}
}

// waitLockWaiter waits until a session waits for a lock with a query like
// pattern.
func waitLockWaiter(t *testing.T, db *sql.DB, pattern string) {
	t.Helper()
	var n int
	var err error
	// No signal crosses the process boundary: pg_stat_activity is asked again.
	poll.Wait(30*time.Second, nil, func() bool {
		err = db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
			pattern).Scan(&n)
		return err != nil || n > 0
	})
	switch {
	case err != nil:
		t.Fatal(err)
	case n == 0:
		t.Fatalf("no session waits for a lock with a query like %q", pattern)
	}
}

// checkRecoveredInPlace: node-b is the process that took the lane, it
// took it once, and it holds the lease it took (the same token): the
// recovery was retried in place, not by a restart or a second takeover.
func checkRecoveredInPlace(t *testing.T, b *clusterProc, db *sql.DB, key string, taken map[string]any) {
	t.Helper()
	select {
	case <-b.done:
		t.Fatalf("node-b exited: %v", b.cmd.ProcessState)
	default:
	}
	takeovers := len(logEvents(b.daemonProc, "cluster.lane_taken", laneIs(key)))
	t.Logf("cluster.lane_taken for the lane on node-b: %d", takeovers)
	if takeovers != 1 {
		t.Errorf("node-b took lane %s %d times, want once (recovered in place)", key, takeovers)
	}
	var holder string
	var token int64
	if err := db.QueryRow(`SELECT holder, token FROM cluster_leases WHERE name = $1`, cluster.LanePrefix+key).
		Scan(&holder, &token); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(taken["token"]); holder != "node-b" || fmt.Sprint(token) != want {
		t.Errorf("lease of %s: holder %q token %d, want node-b with the token it took, %s", key, holder, token, want)
	}
	for _, e := range logEvents(b.daemonProc, "cluster.lease_lost", nil) {
		t.Errorf("node-b lost a lease during the outage: %v", e)
	}
}

// checkOutageOutcome: the held turn, cut off by node-a's death, is told
// once and not rerun; the queued message is answered once, by node-b's
// model; nothing of the lane is left to run; and a client sending either
// message again (same id) gets the recorded outcome.
func checkOutageOutcome(t *testing.T, b *clusterProc, models map[string]*gatedModel, db *sql.DB, lane, key string,
	sent []*sentMessage) {
	t.Helper()
	held, queued := sent[0], sent[1]
	settleInbox(t, db)
	waitReplySent(t, db, queued.id)
	var open int
	if err := db.QueryRow(`SELECT count(*) FROM inbox WHERE session_key = $1 AND state IN ('received', 'processing')`,
		key).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Errorf("%d inbox rows of %s left received or processing, want none", open, key)
	}
	var notices int
	if err := db.QueryRow(`SELECT count(*) FROM outbox WHERE session_key = $1 AND text = $2`,
		key, gateway.CutOffNotice(holdMarker+" turn "+held.token)).Scan(&notices); err != nil {
		t.Fatal(err)
	}
	if notices != 1 {
		t.Errorf("the cut-off turn was told %d times, want once", notices)
	}
	if n := len(logEvents(b.daemonProc, "recover.cut_off", laneIs(key))); n != 1 {
		t.Errorf("node-b logged recover.cut_off %d times for %s, want once", n, key)
	}
	if n := tokenRequests([]*gatedModel{models["node-b"]}, held.token); n != 0 {
		t.Errorf("the cut-off turn reached node-b's model %d times, want none (told, not rerun)", n)
	}
	rows, sentRows := repliesTo(t, db, queued.id)
	atA := tokenRequests([]*gatedModel{models["node-a"]}, queued.token)
	atB := tokenRequests([]*gatedModel{models["node-b"]}, queued.token)
	t.Logf("queued message: %d reply rows (%d sent), at node-a's model %d times, at node-b's %d; cut-off notices %d",
		rows, sentRows, atA, atB, notices)
	if rows != 1 || sentRows != 1 || atA != 0 || atB != 1 {
		t.Errorf("the queued message: %d reply rows (%d sent), model requests node-a %d node-b %d; want one reply, run once on node-b",
			rows, sentRows, atA, atB)
	}

	again := <-postLane(b, lane, queued.id, "queued message "+queued.token, false)
	if want := "ECHO: queued message " + queued.token; again.code != http.StatusOK || again.reply.Reply != want {
		t.Errorf("the queued message sent again: %d %v %q, want its answer %q replayed", again.code, again.err, again.body, want)
	}
	cut := <-postLane(b, lane, held.id, holdMarker+" turn "+held.token, false)
	if cut.code != http.StatusConflict || !strings.Contains(cut.body, "cut off") {
		t.Errorf("the cut-off message sent again: %d %q, want 409 saying it was cut off", cut.code, cut.body)
	}
}

// waitReplySent waits until a reply to message id is sent. Not every
// outbox row of an API lane is: its notices wait, held, for the client's
// next request (waitOutboxSent would wait for them too).
func waitReplySent(t *testing.T, db *sql.DB, id string) {
	t.Helper()
	// No signal crosses the process boundary: the outbox is asked again.
	if !poll.Wait(30*time.Second, nil, func() bool { _, sent := repliesTo(t, db, id); return sent > 0 }) {
		t.Fatalf("no reply to %s sent", id)
	}
}
