package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// Cluster faults from outside: two real daemons on one real
// PostgreSQL of their own, eight API lanes, each node its own fake model so
// every model request is tied to a node, and a client that sends every
// message with its own id and a unique token.

// faultLanes is how many API lanes the fault tests drive, half placed on
// each node.
const faultLanes = 8

// faultCluster is the two nodes of a fault test and their server.
type faultCluster struct {
	t      *testing.T
	pg     *pgtest.Server
	dsn    string
	bin    string
	ttl    time.Duration
	ids    []string
	nodes  map[string]*clusterProc
	models map[string]*codextest.Model
	lanes  []string          // API lane names
	owner  map[string]string // lane → its node while both are live
}

// newFaultCluster starts node-a and node-b with lease TTL ttl, each with
// its own fake model answering with reply, and picks the lanes.
func newFaultCluster(t *testing.T, ttl time.Duration, reply func(codextest.Request) codextest.Reply) *faultCluster {
	t.Helper()
	pg := pgtest.Start(t, pgtest.Options{}) // its own: freezing the shared one would stall other tests
	f := &faultCluster{t: t, pg: pg, bin: buildDaemon(t), ttl: ttl, ids: []string{"node-a", "node-b"},
		nodes: map[string]*clusterProc{}, models: map[string]*codextest.Model{}, owner: map[string]string{}}
	f.dsn = pg.NewDatabase(t)
	perNode := map[string]int{}
	for i := 0; len(f.lanes) < faultLanes && i < 1000; i++ {
		name := fmt.Sprintf("lane-%d", i)
		owner, _ := cluster.Place(apiLaneKey(t, name), f.ids)
		if perNode[owner] < faultLanes/2 {
			perNode[owner]++
			f.lanes = append(f.lanes, name)
			f.owner[name] = owner
		}
	}
	for _, id := range f.ids {
		m := codextest.NewModel(t)
		m.Respond(reply)
		f.models[id] = m
		f.nodes[id] = writeClusterNodeWith(t, f.dsn, id, m, map[string]any{
			"cluster":  map[string]any{"node_id": id, "lease_ttl": ttl.String()},
			"shutdown": map[string]any{"drain_timeout": "30s"},
		}).start(t, f.bin)
	}
	for _, id := range f.ids {
		waitHealthy(t, f.nodes[id].api, f.nodes[id].daemonProc)
	}
	return f
}

func (f *faultCluster) other(id string) string {
	if id == f.ids[0] {
		return f.ids[1]
	}
	return f.ids[0]
}

// warm answers one message on every lane, so each is taken by its node
// and has a thread before the fault.
func (f *faultCluster) warm() {
	f.t.Helper()
	res := map[string]<-chan apiAnswer{}
	for _, lane := range f.lanes {
		res[lane] = postLane(f.nodes[f.owner[lane]], lane, "warm-"+lane, "warm "+lane, false)
	}
	for _, lane := range f.lanes {
		if a := <-res[lane]; a.err != nil || a.code != http.StatusOK {
			f.t.Fatalf("warming lane %s: %d %v %q", lane, a.code, a.err, a.body)
		}
	}
}

// laneLeases is which node holds each lane's lease now, by the database.
func (f *faultCluster) laneLeases(db *sql.DB) map[string]string {
	f.t.Helper()
	rows, err := db.Query(`SELECT name, holder FROM cluster_leases
		WHERE name LIKE 'lane:%' AND holder <> '' AND expires_at > clock_timestamp()`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, holder string
		if err := rows.Scan(&name, &holder); err != nil {
			f.t.Fatal(err)
		}
		out[name] = holder
	}
	return out
}

// trafficMessage is one message of the traffic and what became of it.
type trafficMessage struct {
	lane, id, text string
	at, done       time.Time
	answered       bool   // a 200 with the model's echo of text
	cutOff         bool   // told to send it again with a new id
	last           string // the last status and body, for the report
}

// traffic sends message after message on every lane until stop, each by
// senders of its own, through the node via picks. A message not answered
// (a node stopping, a transport error, a 5xx) is sent again under the same
// id, which the API answers as a replay.
type traffic struct {
	f   *faultCluster
	via func(lane string, sender int) string

	mu       sync.Mutex
	idle     *sync.Cond
	inflight map[string]int // requests under way per node
	sent     []*trafficMessage
	// answered wakes waitAnswered each time a message's outcome is written.
	answered poll.Broadcast
	stop     chan struct{}
	wg       sync.WaitGroup
}

func startTraffic(f *faultCluster, senders int, via func(lane string, sender int) string) *traffic {
	tr := &traffic{f: f, via: via, inflight: map[string]int{}, stop: make(chan struct{})}
	tr.idle = sync.NewCond(&tr.mu)
	for _, lane := range f.lanes {
		for s := range senders {
			tr.wg.Go(func() { tr.run(lane, s) })
		}
	}
	return tr
}

func (tr *traffic) run(lane string, sender int) {
	for n := 0; ; n++ {
		select {
		case <-tr.stop:
			return
		default:
		}
		id := fmt.Sprintf("%s-s%d-m%d", lane, sender, n)
		m := &trafficMessage{lane: lane, id: id, text: "TOKEN " + id, at: time.Now()}
		tr.mu.Lock()
		tr.sent = append(tr.sent, m)
		tr.mu.Unlock()
		tr.deliver(m, sender)
	}
}

// deliver sends m until it is answered, cut off, or two minutes passed
// (lost).
func (tr *traffic) deliver(m *trafficMessage, sender int) {
	for time.Since(m.at) < 2*time.Minute {
		tr.mu.Lock()
		node := tr.via(m.lane, sender)
		tr.inflight[node]++
		tr.mu.Unlock()
		a := <-postLane(tr.f.nodes[node], m.lane, m.id, m.text, false)
		// m's outcome is written under mu: waitAnswered reads it while
		// the traffic runs.
		tr.mu.Lock()
		tr.inflight[node]--
		tr.idle.Broadcast()
		m.last = fmt.Sprintf("%d %v %s", a.code, a.err, strings.TrimSpace(a.body))
		finished := true
		switch {
		case a.err == nil && a.code == http.StatusOK:
			m.done, m.answered = time.Now(), a.reply.Reply == "ECHO: "+m.text
		case strings.Contains(a.body, "send it again with a new id"):
			m.done, m.cutOff = time.Now(), true
		default:
			finished = false
		}
		tr.mu.Unlock()
		tr.answered.Notify()
		if finished {
			return
		}
		time.Sleep(200 * time.Millisecond) // a refused connection or a 5xx: the pause before sending again
	}
}

// setVia changes the routing; once it returns no new request takes the old
// one.
func (tr *traffic) setVia(via func(lane string, sender int) string) {
	tr.mu.Lock()
	tr.via = via
	tr.mu.Unlock()
}

// waitIdle waits until no request is under way through node.
func (tr *traffic) waitIdle(node string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for tr.inflight[node] > 0 {
		tr.idle.Wait()
	}
}

// waitAnswered waits until every lane has n messages sent after since
// and answered.
func (tr *traffic) waitAnswered(t *testing.T, since time.Time, n int, within time.Duration) {
	t.Helper()
	short := 0
	poll.Wait(within, tr.answered.Wait, func() bool {
		short = tr.lanesShort(since, n)
		return short == 0
	})
	if short > 0 {
		t.Fatalf("%d lanes without %d answers since %v", short, n, since.Format(time.StampMilli))
	}
}

// lanesShort counts the lanes with fewer than n messages sent after since
// and answered.
func (tr *traffic) lanesShort(since time.Time, n int) int {
	tr.mu.Lock()
	per := map[string]int{}
	for _, m := range tr.sent {
		if m.at.After(since) && m.answered {
			per[m.lane]++
		}
	}
	tr.mu.Unlock()
	short := 0
	for _, lane := range tr.f.lanes {
		if per[lane] < n {
			short++
		}
	}
	return short
}

// finish stops sending and waits for the messages under way.
func (tr *traffic) finish() []*trafficMessage {
	close(tr.stop)
	tr.wg.Wait()
	return tr.sent
}

// faultCounts is what a fault test reports of its traffic.
type faultCounts struct {
	accepted, answered, cutOff, lost, doubled int
	gaps                                      map[string]*trafficMessage // lane → its message that waited longest for its answer
	waits                                     []time.Duration            // of every answered message
}

// medianWait is the usual wait for an answer: the turn's own time.
func (c faultCounts) medianWait() time.Duration {
	if len(c.waits) == 0 {
		return 0
	}
	w := slices.Clone(c.waits)
	slices.Sort(w)
	return w[len(w)/2]
}

// countTraffic checks every message recorded by the cluster (accepted)
// against the client's results, the outbox and both models' requests.
func countTraffic(t *testing.T, f *faultCluster, db *sql.DB, sent []*trafficMessage) faultCounts {
	t.Helper()
	c := faultCounts{gaps: map[string]*trafficMessage{}}
	hits := map[string]int{} // message text → model requests whose last user text it is
	for _, m := range f.models {
		for _, r := range m.Requests() {
			hits[r.LastUserText()]++
		}
	}
	for _, m := range sent {
		var recorded int
		if err := db.QueryRow(`SELECT count(*) FROM inbox WHERE platform = 'api' AND message_id = $1`, m.id).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		if recorded == 0 {
			continue // never accepted (the client stopped before it was)
		}
		c.accepted++
		rows, _ := repliesTo(t, db, m.id)
		switch {
		case m.answered:
			c.answered++
			c.waits = append(c.waits, m.done.Sub(m.at))
			if g := c.gaps[m.lane]; g == nil || m.done.Sub(m.at) > g.done.Sub(g.at) {
				c.gaps[m.lane] = m
			}
		case m.cutOff:
			c.cutOff++
			t.Logf("cut off: %s (%s)", m.id, m.last)
		default:
			c.lost++
			t.Errorf("message %s accepted but not answered: %s", m.id, m.last)
		}
		if hits[m.text] > 1 || (m.answered && rows != 1) {
			c.doubled++
			t.Errorf("message %s reached the models %d times, %d replies", m.id, hits[m.text], rows)
		}
	}
	return c
}

// eventTimes are the times of a daemon's log events named event, by lease.
func eventTimes(t *testing.T, d *daemonProc, event string) map[string][]time.Time {
	t.Helper()
	out := map[string][]time.Time{}
	for _, e := range logEvents(d, event, nil) {
		at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(e["ts"]))
		if err != nil {
			t.Fatalf("%s: ts %v: %v", event, e["ts"], err)
		}
		name := fmt.Sprint(e["lease"])
		out[name] = append(out[name], at)
	}
	return out
}

// PostgreSQL frozen (SIGSTOP of the server and its backends) for well past
// the lease TTL while both nodes run turns and hold queued messages, then
// thawed: every accepted message is answered once; each node declares
// every lane lease it held lost, all in one sweep rather than one by one;
// and a node taking its own lanes back carries on with its queued work:
// no commit of it is refused by the fence, no turn cut off.
func TestProcessClusterDatabaseFrozenPastTheTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two daemons")
	}
	const ttl = clusterTTL
	const frozenFor = 8 * time.Second // past two TTLs
	f := newFaultCluster(t, ttl, func(r codextest.Request) codextest.Reply {
		reply := codextest.DefaultReply(r)
		reply.Chunks, reply.ChunkDelay = 4, 250*time.Millisecond // turns run while the server stops
		return reply
	})
	f.warm()
	db := openTestDB(t, f.dsn)
	// Two senders a lane, one through its owner and one through the other
	// node, so turns run and messages wait behind them on both nodes.
	tr := startTraffic(f, 2, func(lane string, sender int) string {
		if sender == 0 {
			return f.owner[lane]
		}
		return f.other(f.owner[lane])
	})
	start := time.Now()
	tr.waitAnswered(t, start, 2, 2*time.Minute)
	held := f.laneLeases(db)

	frozeAt := time.Now()
	if err := f.pg.Freeze(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(frozenFor) // the fault itself
	if err := f.pg.Thaw(); err != nil {
		t.Fatal(err)
	}
	thawedAt := time.Now()
	tr.waitAnswered(t, thawedAt, 2, 2*time.Minute)
	sent := tr.finish()
	c := countTraffic(t, f, db, sent)
	var waited []time.Duration // answers to messages sent before the thaw, from the thaw
	for _, m := range sent {
		if m.answered && m.at.Before(thawedAt) && m.done.After(thawedAt) {
			waited = append(waited, m.done.Sub(thawedAt))
		}
	}
	slices.Sort(waited)
	if len(waited) > 0 {
		t.Logf("%d messages sent before the thaw answered %v to %v after it", len(waited),
			waited[0].Round(time.Millisecond), waited[len(waited)-1].Round(time.Millisecond))
	}

	// A lane whose lease lapsed may still be taken by the other node at the
	// thaw, if it asks first: then a write of its old owner is refused, and
	// a turn cut off, as they must be. The carried-over work is asserted of
	// the lanes that stayed with their owner.
	moved := map[string]bool{}
	for lane, owner := range f.owner {
		key := "v1:api:" + lane
		for _, id := range f.ids {
			if id != owner && len(logEvents(f.nodes[id].daemonProc, "cluster.lane_taken", laneIs(key))) > 0 {
				moved[key] = true
			}
		}
	}
	stayed := func(e map[string]any) bool { key, _ := e["lane"].(string); return !moved[key] }
	refused := 0
	for _, id := range f.ids {
		d := f.nodes[id].daemonProc
		refused += len(logEvents(d, "turn.commit_fenced", stayed)) + len(logEvents(d, "cluster.write_fenced", stayed))
		lost := eventTimes(t, d, "cluster.lease_lost")
		var first, last time.Time
		declared, mine := 0, 0
		for name, holder := range held {
			if holder != id {
				continue
			}
			mine++
			for _, at := range lost[name] {
				if at.Before(frozeAt) || at.After(thawedAt) {
					continue
				}
				declared++
				if first.IsZero() || at.Before(first) {
					first = at
				}
				if at.After(last) {
					last = at
				}
				break
			}
		}
		if declared != mine {
			t.Errorf("%s declared %d of its %d lane leases lost while the database was frozen past the TTL, want all",
				id, declared, mine)
		}
		if declared > 0 {
			t.Logf("%s: %d lane leases declared lost %v to %v after the freeze (spread %v)", id, declared,
				first.Sub(frozeAt).Round(time.Millisecond), last.Sub(frozeAt).Round(time.Millisecond),
				last.Sub(first).Round(time.Millisecond))
		}
	}
	if refused != 0 {
		t.Errorf("%d lane writes refused by the fence after the freeze, want none (a node re-taking its own lane carries its work over)", refused)
	}
	cutOff := 0
	for _, m := range sent {
		if m.cutOff && !moved["v1:api:"+m.lane] {
			cutOff++
		}
	}
	if cutOff != 0 {
		t.Errorf("%d messages cut off by the freeze on lanes that stayed with their owner, want none", cutOff)
	}
	if len(moved) > 0 {
		t.Logf("%d lanes were taken by the other node at the thaw: %v", len(moved), moved)
	}
	t.Logf("database frozen %v at lease_ttl %v: accepted %d, answered %d, cut off %d, lost %d, doubled %d, refused writes %d",
		frozenFor, ttl, c.accepted, c.answered, c.cutOff, c.lost, c.doubled, refused)
}

// A rolling restart: each node in turn stopped with SIGTERM and down for
// 8 s while a client sends to every lane through the node that stays up.
// Nothing is lost or answered twice; the stopped node reads as gone the
// moment it exits (it left the cluster instead of letting its heartbeat
// age a TTL), so its lanes are placed on the other node at once. The
// longest wait for an answer per lane is reported, not asserted.
func TestProcessClusterRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two daemons")
	}
	const ttl = 5 * time.Second
	const downFor = 8 * time.Second
	f := newFaultCluster(t, ttl, codextest.DefaultReply)
	f.warm()
	db := openTestDB(t, f.dsn)
	up := f.ids[0]
	via := func(string, int) string { return up }
	tr := startTraffic(f, 1, via)
	tr.waitAnswered(t, time.Now(), 2, 2*time.Minute)
	var steps stepLog

	for _, stopped := range []string{f.ids[1], f.ids[0]} {
		survivor := f.other(stopped)
		tr.setVia(func(string, int) string { return survivor })
		tr.waitIdle(stopped)
		n := f.nodes[stopped]
		var held []string
		for name, holder := range f.laneLeases(db) {
			if holder == stopped {
				held = append(held, name)
			}
		}
		stoppedAt := steps.add(stopped + " SIGTERM")
		if code := n.terminate(t, 60*time.Second); code != 0 {
			t.Fatalf("%s exited %d after SIGTERM:\n%s", stopped, code, n.logs())
		}
		exitedAt := steps.add(stopped + " exited")
		// At once, well within the TTL: the node is not live any more, so
		// placement gives its lanes to the survivor now.
		if live := liveNodes(t, db, ttl); slices.Contains(live, stopped) {
			t.Errorf("%s still live %v after it exited (live: %v), want it gone at once",
				time.Since(exitedAt).Round(time.Millisecond), stopped, live)
		}
		for _, name := range held {
			key := strings.TrimPrefix(name, cluster.LanePrefix)
			if got := waitLogEvents(t, f.nodes[survivor].daemonProc, "cluster.lane_taken", laneIs(key)); len(got) == 0 {
				t.Errorf("%s did not take lane %s after %s stopped", survivor, key, stopped)
			}
		}
		reportHandover(t, n.daemonProc, f.nodes[survivor].daemonProc, held, stoppedAt, exitedAt)
		time.Sleep(downFor - time.Since(stoppedAt)) // the node is down for this long: the fault itself
		n.start(t, f.bin)
		steps.add(stopped + " started")
		waitHealthy(t, n.api, n.daemonProc)
		steps.add(stopped + " healthy")
		tr.waitAnswered(t, time.Now(), 2, 2*time.Minute)
	}
	c := countTraffic(t, f, db, tr.finish())
	if c.cutOff != 0 {
		t.Errorf("%d messages cut off by the rolling restart, want none", c.cutOff)
	}
	var longest time.Duration
	lanes := append([]string(nil), f.lanes...)
	sort.Strings(lanes)
	for _, lane := range lanes {
		m := c.gaps[lane]
		wait := m.done.Sub(m.at)
		t.Logf("lane %s: longest wait for an answer %v, sent %s", lane, wait.Round(time.Millisecond), steps.when(m.at))
		longest = max(longest, wait)
	}
	t.Logf("rolling restart, each node down %v, lease_ttl %v: accepted %d, answered %d, cut off %d, lost %d, doubled %d, "+
		"longest gap %v (median wait %v)", downFor, ttl, c.accepted, c.answered, c.cutOff, c.lost, c.doubled,
		longest.Round(time.Millisecond), c.medianWait().Round(time.Millisecond))
}

// reportHandover logs how the stopped node's lanes moved: how long its
// drain took (SIGTERM to leaving the cluster; to its exit on a build that
// does not leave) and when the survivor had taken the last of them.
func reportHandover(t *testing.T, stopped, survivor *daemonProc, held []string, sigterm, exited time.Time) {
	t.Helper()
	left := exited
	if at := eventAfter(t, stopped, "cluster.left", nil, sigterm); !at.IsZero() {
		left = at
	}
	var taken []time.Duration // from leaving to each lane's takeover
	for _, name := range held {
		at := eventAfter(t, survivor, "cluster.lane_taken", laneIs(strings.TrimPrefix(name, cluster.LanePrefix)), sigterm)
		taken = append(taken, at.Sub(left).Round(time.Millisecond))
	}
	slices.Sort(taken)
	t.Logf("%d lanes held by the stopped node: SIGTERM to left %v, to exit %v; taken by the survivor %v after it left",
		len(held), left.Sub(sigterm).Round(time.Millisecond), exited.Sub(sigterm).Round(time.Millisecond), taken)
}

// eventAfter is the time of d's first log event named event (and matching)
// after since; zero if none.
func eventAfter(t *testing.T, d *daemonProc, event string, match func(map[string]any) bool, since time.Time) time.Time {
	t.Helper()
	for _, e := range logEvents(d, event, match) {
		at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(e["ts"]))
		if err != nil {
			t.Fatalf("%s: ts %v: %v", event, e["ts"], err)
		}
		if at.After(since) {
			return at
		}
	}
	return time.Time{}
}

// stepLog is when each step of a fault test happened, to place the
// longest waits in the report.
type stepLog []struct {
	at   time.Time
	what string
}

func (s *stepLog) add(what string) time.Time {
	now := time.Now()
	*s = append(*s, struct {
		at   time.Time
		what string
	}{now, what})
	return now
}

// when names the last step before at and how long after it at was.
func (s stepLog) when(at time.Time) string {
	out := "before the first step"
	for _, st := range s {
		if st.at.After(at) {
			break
		}
		out = fmt.Sprintf("%v after %s", at.Sub(st.at).Round(time.Millisecond), st.what)
	}
	return out
}

// liveNodes is what placement sees as live: the nodes cluster.Node's
// LiveNodes lists.
func liveNodes(t *testing.T, db *sql.DB, ttl time.Duration) []string {
	t.Helper()
	n, err := cluster.NewNode(db, "observer")
	if err != nil {
		t.Fatal(err)
	}
	live, err := n.LiveNodes(t.Context(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return live
}
