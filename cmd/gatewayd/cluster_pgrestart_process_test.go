package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// holdMarker in a message makes the fake model hold its reply until the
// test lets it go: the turn is in flight, deterministically.
const holdMarker = "HOLD"

// gatedModel is a node's fake model: echoing, except that a request whose
// last user text has holdMarker waits for the current gate to open.
type gatedModel struct {
	*codextest.Model
	mu   sync.Mutex
	gate chan struct{}
}

func newGatedModel(t *testing.T) *gatedModel {
	m := &gatedModel{Model: codextest.NewModel(t), gate: make(chan struct{})}
	m.Respond(func(r codextest.Request) codextest.Reply {
		if strings.Contains(r.LastUserText(), holdMarker) {
			m.mu.Lock()
			gate := m.gate
			m.mu.Unlock()
			<-gate
		}
		return codextest.DefaultReply(r)
	})
	t.Cleanup(func() { m.open() }) // no handler left waiting
	return m
}

// open lets every held reply go and makes a new gate for the next ones.
func (m *gatedModel) open() {
	m.mu.Lock()
	defer m.mu.Unlock()
	close(m.gate)
	m.gate = make(chan struct{})
}

// tokenRequests counts the model requests whose last user text has token.
func tokenRequests(models []*gatedModel, token string) int {
	n := 0
	for _, m := range models {
		for _, r := range m.Requests() {
			if strings.Contains(r.LastUserText(), token) {
				n++
			}
		}
	}
	return n
}

// sentMessage is one API message of the test and what became of it.
type sentMessage struct {
	id, token, lane, via string
	answer               <-chan apiAnswer
	got                  apiAnswer
}

// restartTally is what the test counts over all messages.
type restartTally struct {
	accepted, answered, lost, doubled, errors5xx, firstWriteFailed, leftOpen int
	modelTwice, modelNever                                                   int
}

// Two gatewayd nodes on one PostgreSQL, the real app-server, each node its
// own fake model, eight API lanes (half owned by each node) and every
// message with a client id and a unique token. The server is restarted
// (`pg_ctl restart -m fast`) three times while turns are in flight on both
// nodes, half of them asked on the node that does not own the lane: every
// accepted message is answered exactly once (its reply carries its token
// once, one outbox row), no inbox row is left processing, each token
// reaches a model exactly once, and the first API write after each
// restart succeeds.
func TestProcessClusterPostgresRestartLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two daemons and restarts PostgreSQL")
	}
	srv := pgtest.Start(t, pgtest.Options{})
	dsn := srv.NewDatabase(t)
	bin := buildDaemon(t)
	ids := []string{"node-a", "node-b"}
	models := []*gatedModel{newGatedModel(t), newGatedModel(t)}
	nodes := map[string]*clusterProc{}
	for i, id := range ids {
		nodes[id] = writeClusterNodeWith(t, dsn, id, models[i].Model, map[string]any{
			"cluster": map[string]any{"node_id": id, "lease_ttl": clusterTTL.String()},
		}).start(t, bin)
	}
	for _, id := range ids {
		waitHealthy(t, nodes[id].api, nodes[id].daemonProc)
	}
	lanes, probes := restartLanes(t, ids)
	other := map[string]string{"node-a": "node-b", "node-b": "node-a"}

	var all []*sentMessage
	send := func(lane, via, id, text string, stream bool) *sentMessage {
		// Bracketed, so that no token is a part of another (lane 1's of 10's).
		m := &sentMessage{id: id, token: "[token " + id + "]", lane: lane, via: via}
		m.answer = postLane(nodes[via], lane, id, text+" "+m.token, stream)
		all = append(all, m)
		return m
	}
	var tally restartTally
	for round := 0; round < 3; round++ {
		var held []*sentMessage
		for i, lane := range lanes {
			owner, _ := cluster.Place(apiLaneKey(t, lane), ids)
			via := owner
			if (i+round)%2 == 1 {
				via = other[owner] // held by the node that does not own the lane
			}
			held = append(held, send(lane, via, fmt.Sprintf("r%d-%s", round, lane), holdMarker+" turn", i%2 == 1))
		}
		waitTokensAtModels(t, models, held)
		var probed []*sentMessage
		switch round {
		case 1:
			// The commits race the shutdown: some land before it, some
			// on the dead connections, some while the server is down.
			for _, m := range models {
				m.open()
			}
			restartPG(t, srv)
		default:
			restartPG(t, srv)
			// The first writes after the restart: a message on each
			// node, on an idle lane, while the held turns still wait.
			for _, id := range ids {
				probed = append(probed, send(probes[id], id, fmt.Sprintf("r%d-probe-%s", round, id), "probe", false))
			}
			for _, m := range probed {
				m.got = <-m.answer
				if m.got.code != http.StatusOK {
					tally.firstWriteFailed++
					t.Errorf("round %d: first write after the restart, on %s: %d %v %q", round, m.via, m.got.code, m.got.err, m.got.body)
				}
			}
			for _, m := range models {
				m.open()
			}
		}
		for _, m := range held {
			m.got = <-m.answer
		}
	}

	db := openTestDB(t, dsn)
	settleInbox(t, db)
	waitOutboxSent(t, dsn)
	for _, m := range all {
		tally.count(t, db, models, m)
	}
	var open int
	if err := db.QueryRow(`SELECT count(*) FROM inbox WHERE state IN ('received', 'processing')`).Scan(&open); err != nil {
		t.Fatal(err)
	}
	tally.leftOpen = open
	t.Logf("PostgreSQL restarted 3 times with turns in flight: %d messages accepted, %d answered once, %d lost, %d doubled, "+
		"%d 5xx answers, %d first writes after a restart failed, %d inbox rows left open, tokens at a model twice %d / never %d",
		tally.accepted, tally.answered, tally.lost, tally.doubled, tally.errors5xx, tally.firstWriteFailed, tally.leftOpen,
		tally.modelTwice, tally.modelNever)
	if tally.lost+tally.doubled+tally.errors5xx+tally.firstWriteFailed+tally.leftOpen+tally.modelTwice+tally.modelNever > 0 ||
		tally.answered != len(all) {
		t.Errorf("want every message answered exactly once: %+v of %d messages", tally, len(all))
	}
}

// count checks one message: answered 200 with its token once, one reply
// row, its token at a model exactly once.
func (r *restartTally) count(t *testing.T, db *sql.DB, models []*gatedModel, m *sentMessage) {
	t.Helper()
	var state string
	err := db.QueryRow(`SELECT state FROM inbox WHERE platform = 'api' AND message_id = $1`, m.id).Scan(&state)
	if err == nil {
		r.accepted++
	}
	rows, _ := repliesTo(t, db, m.id)
	atModel := tokenRequests(models, m.token)
	ok := m.got.err == nil && m.got.code == http.StatusOK && strings.Count(m.got.reply.Reply, m.token) == 1
	switch {
	case m.got.code >= 500:
		r.errors5xx++
		t.Errorf("%s (lane %s via %s): %d %q", m.id, m.lane, m.via, m.got.code, m.got.body)
	case !ok:
		t.Errorf("%s (lane %s via %s): %d %v reply %q, want its token once", m.id, m.lane, m.via, m.got.code, m.got.err, m.got.reply.Reply)
	}
	switch {
	case rows == 0 && err == nil:
		r.lost++
		t.Errorf("%s (lane %s via %s): accepted (inbox %s) but no reply row", m.id, m.lane, m.via, state)
	case rows > 1 || strings.Count(m.got.reply.Reply, m.token) > 1:
		r.doubled++
		t.Errorf("%s (lane %s via %s): %d reply rows, reply %q", m.id, m.lane, m.via, rows, m.got.reply.Reply)
	}
	switch {
	case atModel > 1:
		r.modelTwice++
		t.Errorf("%s: its token reached a model %d times", m.id, atModel)
	case atModel == 0:
		r.modelNever++
		t.Errorf("%s: its token never reached a model", m.id)
	}
	if ok && rows == 1 && atModel == 1 {
		r.answered++
	}
}

// restartLanes picks eight API lanes, four owned by each node, and an
// idle probe lane per node.
func restartLanes(t *testing.T, ids []string) (lanes []string, probes map[string]string) {
	t.Helper()
	per := map[string]int{}
	probes = map[string]string{}
	for i := 0; i < 500 && (len(lanes) < 8 || len(probes) < 2); i++ {
		name := fmt.Sprintf("pgr-%d", i)
		owner, err := cluster.Place(apiLaneKey(t, name), ids)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case per[owner] < 4:
			per[owner]++
			lanes = append(lanes, name)
		case probes[owner] == "":
			probes[owner] = name
		}
	}
	if len(lanes) < 8 || len(probes) < 2 {
		t.Fatal("no spread of lanes found; pick other names")
	}
	return lanes, probes
}

// waitTokensAtModels waits until every held message's turn has reached a
// model (and waits there): the model records requests in this process,
// and polling them is the only view of it.
func waitTokensAtModels(t *testing.T, models []*gatedModel, held []*sentMessage) {
	t.Helper()
	missing := 0
	poll.Wait(90*time.Second, nil, func() bool {
		missing = 0
		for _, m := range held {
			if tokenRequests(models, m.token) == 0 {
				missing++
			}
		}
		return missing == 0
	})
	if missing > 0 {
		t.Fatalf("%d of %d held turns never reached a model", missing, len(held))
	}
}

func restartPG(t *testing.T, srv *pgtest.Server) {
	t.Helper()
	start := time.Now()
	if err := srv.FastRestart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL restarted (pg_ctl restart -m fast) in %v", time.Since(start).Round(time.Millisecond))
}

// settleInbox waits (bounded) until no inbox row is received or processing:
// a row left so is counted by the caller.
func settleInbox(t *testing.T, db *sql.DB) {
	t.Helper()
	var err error
	// No signal crosses the process boundary: the table is asked again.
	poll.Wait(30*time.Second, nil, func() bool {
		var n int
		err = db.QueryRow(`SELECT count(*) FROM inbox WHERE state IN ('received', 'processing')`).Scan(&n)
		return err != nil || n == 0
	})
	if err != nil {
		t.Fatal(err)
	}
}
