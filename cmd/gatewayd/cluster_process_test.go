package main

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// clusterTTL is the lease TTL of the process tests: short, so takeovers
// come quickly, but 3 s rather than 2 s because a daemon starved of CPU
// for over a third of a TTL on a loaded 2-core machine loses a renewal and
// then its lane, and the test would see a cut-off turn it did not cause.
const clusterTTL = 3 * time.Second

// clusterProc is one node of the test cluster.
type clusterProc struct {
	id      string
	cfgFile string
	dir     string
	api     *client.API
	*daemonProc
}

func startClusterNode(t *testing.T, bin, dsn, id string, tg *telegramtest.Server, model *codextest.Model, users []string) *clusterProc {
	t.Helper()
	return writeClusterNode(t, dsn, id, clusterTTL, tg, model, users).start(t, bin)
}

// writeClusterNode writes a node's config in a new directory (its own
// state_dir and CODEX_HOME); start runs it, again after a kill to restart.
func writeClusterNode(t *testing.T, dsn, id string, ttl time.Duration, tg *telegramtest.Server, model *codextest.Model, users []string) *clusterProc {
	t.Helper()
	return writeClusterNodeWith(t, dsn, id, model, map[string]any{
		"cluster": map[string]any{"node_id": id, "lease_ttl": ttl.String()},
		"telegram": map[string]any{"token": telegramtest.Token, "api_url": tg.URL, "allowed_users": users,
			"poll_timeout": "1s"},
	})
}

// writeClusterNodeWith writes a cluster node's config on PostgreSQL (DSN in
// a file), the real codex and the API lane, plus the given top-level
// sections (the cluster's and the platforms').
func writeClusterNodeWith(t testing.TB, dsn, id string, model *codextest.Model, sections map[string]any) *clusterProc {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	dsnFile := filepath.Join(dir, "dsn")
	if err := os.WriteFile(dsnFile, []byte(dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"state_dir": filepath.Join(dir, "state"),
		"log":       map[string]any{"level": "debug", "format": "json"},
		"store":     map[string]any{"driver": "postgres", "dsn_file": dsnFile},
		"codex": map[string]any{
			"command": codextest.CodexBinary(t), "args": codextest.Args(model.URL), "home": codextest.Home(t),
			"cwd": filepath.Join(dir, "work"), "sandbox": "danger-full-access", "start_timeout": "60s",
		},
		"api": map[string]any{"listen": addr, "token": "test-token"},
	}
	for k, v := range sections {
		cfg[k] = v
	}
	return &clusterProc{id: id, cfgFile: writeProcessConfig(t, dir, cfg), dir: dir,
		api: &client.API{Base: "http://" + addr, Token: "test-token", HTTP: &http.Client{Timeout: time.Minute}}}
}

// start runs the node's config as a new process.
func (n *clusterProc) start(t testing.TB, bin string) *clusterProc {
	t.Helper()
	n.daemonProc = startDaemon(t, bin, n.cfgFile, n.dir, n.id, listenNotify(t).path)
	return n
}

// dmKey is the session key of a private chat with the bot.
func dmKey(chat int64) string {
	id := strconv.FormatInt(chat, 10)
	return gateway.Address{Platform: "telegram", Kind: gateway.LaneDM, ChatID: id}.SessionKey()
}

// spreadChats picks private chats so that rendezvous placement over nodes
// gives every node perNode lanes: the test needs each node to serve some.
func spreadChats(t *testing.T, nodes []string, perNode int) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	for chat := int64(5001); chat < 6000; chat++ {
		owner, err := cluster.Place(dmKey(chat), nodes)
		if err != nil {
			t.Fatal(err)
		}
		if len(out[owner]) < perNode {
			out[owner] = append(out[owner], chat)
		}
		if len(out) == len(nodes) && len(out[nodes[0]]) == perNode && len(out[nodes[1]]) == perNode && len(out[nodes[2]]) == perNode {
			return out
		}
	}
	t.Fatal("no spread found")
	return nil
}

// waitMessages waits until chat holds n bot messages and returns when that
// was first seen.
func waitMessages(t *testing.T, tg *telegramtest.Server, chat int64, n int, within time.Duration) time.Time {
	t.Helper()
	tg.WaitFor(within, fmt.Sprintf("%d bot messages in chat %d", n, chat), func() bool {
		return len(tg.Messages(chat, -1)) >= n
	})
	return time.Now()
}

func texts(msgs []telegramtest.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text
	}
	return out
}

// Three gatewayd processes on one PostgreSQL, the fake Telegram and the
// real codex app-server (each node its own CODEX_HOME and state_dir):
//   - the lanes spread over the nodes, each answered once;
//   - kill -9 of a node: its lanes are taken by the others no later than
//     one lease TTL after its leases expired (database clock), and their
//     model requests carry the earlier exchange (the rollout was shipped
//     and restored); nothing is lost or answered twice;
//   - a node SIGSTOPped in the middle of a turn, past its lease: another
//     node takes the lane and tells it once that the turn was cut off; the
//     resumed node's commit is refused by the database, it steps down and
//     its answer never reaches the chat.
func TestProcessClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three daemons")
	}
	dsn := pgtest.Shared(t).NewDatabase(t)
	tg := telegramtest.New(t)
	const slow = "SLOW-TURN"
	model := slowOnceModel(t, slow)
	bin := buildDaemon(t)
	ids := []string{"node-a", "node-b", "node-c"}
	spread := spreadChats(t, ids, 2)
	var users []string
	for _, chats := range spread {
		for _, c := range chats {
			users = append(users, strconv.FormatInt(c, 10))
		}
	}
	nodes := map[string]*clusterProc{}
	for _, id := range ids {
		nodes[id] = startClusterNode(t, bin, dsn, id, tg, model, users)
	}
	for _, id := range ids {
		waitHealthy(t, nodes[id].api, nodes[id].daemonProc)
	}
	user := func(chat int64) models.User {
		return models.User{ID: chat, FirstName: "u" + strconv.FormatInt(chat, 10)}
	}
	dm := func(chat int64) models.Chat { return models.Chat{ID: chat, Type: models.ChatTypePrivate} }
	say := func(chat int64, text string) { tg.Text(dm(chat), user(chat), 0, text, nil) }

	// 1: every lane answered once, by the node placement chose.
	for _, chats := range spread {
		for _, c := range chats {
			say(c, fmt.Sprintf("remember code C-%d", c))
		}
	}
	for id, chats := range spread {
		for _, c := range chats {
			waitMessages(t, tg, c, 1, 60*time.Second)
			if got := waitLogEvents(t, nodes[id].daemonProc, "cluster.lane_taken", laneIs(dmKey(c))); len(got) == 0 {
				t.Errorf("%s did not take lane %s, placed on it", id, dmKey(c))
			}
		}
	}

	// 2: kill -9 the node of spread[victim]; its lanes move with context.
	victim := nodes["node-b"]
	moved := spread["node-b"]
	for _, c := range moved { // the last reply's rollout is shipped before the kill
		waitLogEvents(t, victim.daemonProc, "cluster.shipped", laneIs(dmKey(c)))
	}
	// Killed between a send and its MarkSent, a node's row would be sent
	// again by the new owner: the outbox's at-least-once window, as on one
	// node. This test is about lanes moving, so it kills outside it.
	waitOutboxSent(t, dsn)
	victim.kill9(t)
	killed := time.Now()
	var movedLeases []string
	for _, c := range moved {
		movedLeases = append(movedLeases, cluster.LanePrefix+dmKey(c))
	}
	deadLeases, deadBeat := readLeases(t, dsn, movedLeases), lastHeartbeat(t, dsn, victim.id)
	for _, c := range moved {
		say(c, fmt.Sprintf("what was my code? (chat %d)", c))
	}
	var takeovers []time.Duration
	for _, c := range moved {
		at := waitMessages(t, tg, c, 2, 60*time.Second)
		takeovers = append(takeovers, at.Sub(killed))
		req, ok := model.LastRequestWith(fmt.Sprintf("what was my code? (chat %d)", c))
		if !ok {
			t.Fatalf("the model got no request for chat %d after the kill; chat holds %q", c, texts(tg.Messages(c, -1)))
		}
		if in := req.InputText(); !strings.Contains(in, fmt.Sprintf("C-%d", c)) {
			t.Errorf("chat %d: the new owner's model request lacks the earlier exchange:\n%s", c, in)
		}
	}
	checkMovedWithinTTL(t, dsn, victim.id, deadLeases, deadBeat)
	sort.Slice(takeovers, func(i, j int) bool { return takeovers[i] < takeovers[j] })
	t.Logf("takeover (kill -9 → reply from the new owner), lease_ttl %v: first %v, last %v", clusterTTL,
		takeovers[0].Round(time.Millisecond), takeovers[len(takeovers)-1].Round(time.Millisecond))

	// 3: SIGSTOP node-c in the middle of a turn, past its lease.
	paused := nodes["node-c"]
	chat := spread["node-c"][0]
	say(chat, slow+" please")
	tg.WaitFor(30*time.Second, "the slow turn reaching the model", func() bool {
		_, ok := model.LastRequestWith(slow)
		return ok
	})
	if err := paused.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Another node takes the lane once the lease runs out and tells the
	// chat, once, that the turn was cut off.
	waitMessages(t, tg, chat, 2, 60*time.Second)
	if err := paused.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if got := waitLogEvents(t, paused.daemonProc, "cluster.lane_dropped", laneIs(dmKey(chat))); len(got) == 0 {
		t.Errorf("the resumed node did not step down from %s", dmKey(chat))
	}
	// Its turn ends (the model's slow stream) and its commit is refused.
	// Other writes of the lane are fenced first (cluster.write_fenced), so
	// the wait is for the commit's own refusal, not for any.
	poll.Wait(30*time.Second, paused.daemonProc.logged.Wait, func() bool {
		return len(logEvents(paused.daemonProc, "turn.commit_fenced", laneIs(dmKey(chat)))) > 0
	})
	if len(logEvents(paused.daemonProc, "turn.commit_fenced", laneIs(dmKey(chat)))) == 0 {
		t.Errorf("the resumed node's commit of its cut-off turn was not refused by the fence")
	}

	// Nothing lost, nothing twice: one reply per message, and the slow
	// turn's answer never sent (its commit was refused above, so no
	// outbox row of it exists to deliver later).
	for id, chats := range spread {
		for _, c := range chats {
			msgs := tg.Messages(c, -1)
			want := 1
			if id == "node-b" {
				want = 2
			}
			if c == chat {
				want = 2 // the first reply and the cut-off notice
			}
			if len(msgs) != want {
				t.Errorf("chat %d (first served by %s): %d bot messages %q, want %d", c, id, len(msgs), texts(msgs), want)
			}
			for _, m := range msgs {
				if strings.Contains(m.Text, "ECHO: "+slow) {
					t.Errorf("chat %d got the fenced node's answer %q", c, m.Text)
				}
			}
		}
	}

	// 3b: the cut-off turn, told and kept for /retry, does not pin the
	// lane: its owner hands it back to node-c (placement's choice, live
	// again) once the notice is out, and /retry there reruns the cut-off
	// request, read from the store the new owner shares.
	waitOutboxSent(t, dsn)
	waitLeaseFree(t, dsn, cluster.LanePrefix+dmKey(chat), paused.id)
	say(chat, "/retry")
	waitMessages(t, tg, chat, 3, 60*time.Second)
	if msgs := tg.Messages(chat, -1); !strings.Contains(msgs[2].Text, "ECHO: "+slow) {
		t.Errorf("chat %d after /retry on the new owner: %q, want the cut-off request run again", chat, texts(msgs))
	}
	if got := logEvents(paused.daemonProc, "cluster.lane_taken", laneIs(dmKey(chat))); len(got) < 2 {
		t.Errorf("%s took lane %s %d times, want it taken back for the /retry", paused.id, dmKey(chat), len(got))
	}

	// 4: a fourth node joins: the idle lanes placement now gives it are
	// handed over by their owners and it serves them from their next
	// message; every chat is still answered once.
	joiner := startClusterNode(t, bin, dsn, "node-d", tg, model, users)
	waitHealthy(t, joiner.api, joiner.daemonProc)
	var toJoiner []int64
	all := 0
	for _, chats := range spread {
		for _, c := range chats {
			all++
			owner, _ := cluster.Place(dmKey(c), []string{"node-a", "node-c", "node-d"})
			if owner == "node-d" {
				toJoiner = append(toJoiner, c)
				waitLeaseFree(t, dsn, cluster.LanePrefix+dmKey(c), "node-d")
			}
		}
	}
	t.Logf("node-d joined: %d of %d lanes placed on it", len(toJoiner), all)
	if len(toJoiner) == 0 {
		t.Fatal("placement gives the joining node no lane; pick other chats")
	}
	before := map[int64]int{}
	for _, chats := range spread {
		for _, c := range chats {
			before[c] = len(tg.Messages(c, -1))
			say(c, fmt.Sprintf("after the join (chat %d)", c))
		}
	}
	for _, chats := range spread {
		for _, c := range chats {
			waitMessages(t, tg, c, before[c]+1, 60*time.Second)
		}
	}
	for _, c := range toJoiner {
		if got := waitLogEvents(t, joiner.daemonProc, "cluster.lane_taken", laneIs(dmKey(c))); len(got) == 0 {
			t.Errorf("node-d did not take lane %s, placed on it", dmKey(c))
		}
	}
	waitOutboxSent(t, dsn)
	for _, chats := range spread {
		for _, c := range chats {
			if msgs := tg.Messages(c, -1); len(msgs) != before[c]+1 {
				t.Errorf("chat %d after the join: %d bot messages %q, want %d", c, len(msgs), texts(msgs), before[c]+1)
			}
		}
	}

	// /healthz of a surviving node names its leases.
	resp, err := http.Get(nodes["node-a"].api.Base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health struct {
		Cluster struct {
			Node      string `json:"node"`
			LanesHeld int    `json:"lanes_held"`
		} `json:"cluster"`
	}
	err = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if err != nil || health.Cluster.Node != "node-a" || health.Cluster.LanesHeld == 0 {
		t.Errorf("/healthz cluster = %+v, %v; want node-a holding lanes", health.Cluster, err)
	}

	// Its metrics count the takeovers and the leases held.
	req, err := http.NewRequest(http.MethodGet, nodes["node-a"].api.Base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer test-token")
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metricsText, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{"gatewayd_cluster_takeovers_total", "gatewayd_cluster_lane_leases_held", "gatewayd_cluster_ship_lag_seconds_count"} {
		if !strings.Contains(string(metricsText), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// `cluster status` shows the three nodes, the killed one not live and
	// holding no lane, and the elected poller.
	out := clusterStatus(t, bin, nodes["node-a"])
	for _, want := range []string{"node-a", "node-b", "node-c", "telegram poller: node-"} {
		if !strings.Contains(out, want) {
			t.Errorf("cluster status lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 5 && f[0] == "node-b" && (f[1] != "no" || f[4] != "0") {
			t.Errorf("cluster status shows the killed node-b live or holding lanes: %q", line)
		}
	}
	t.Logf("cluster status:\n%s", out)
}

// leaseRow is one cluster_leases row, its times by the database's clock.
type leaseRow struct {
	holder            string
	token             int64
	acquired, expires time.Time
}

// readLeases reads the rows of the leases names; a missing one fails t.
func readLeases(t *testing.T, dsn string, names []string) map[string]leaseRow {
	t.Helper()
	db := openTestDB(t, dsn)
	out := map[string]leaseRow{}
	for _, name := range names {
		var r leaseRow
		if err := db.QueryRow(`SELECT holder, token, acquired_at, expires_at FROM cluster_leases WHERE name = $1`, name).
			Scan(&r.holder, &r.token, &r.acquired, &r.expires); err != nil {
			t.Fatalf("lease %s: %v", name, err)
		}
		out[name] = r
	}
	return out
}

// lastHeartbeat is node's heartbeat_at, by the database's clock.
func lastHeartbeat(t *testing.T, dsn, node string) time.Time {
	t.Helper()
	var at time.Time
	if err := openTestDB(t, dsn).QueryRow(`SELECT heartbeat_at FROM cluster_nodes WHERE node_id = $1`, node).Scan(&at); err != nil {
		t.Fatalf("heartbeat of %s: %v", node, err)
	}
	return at
}

func openTestDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// checkMovedWithinTTL is "its lanes move within the lease TTL", in the
// database's clock so a slow test machine cannot make it flaky: each lane
// the dead node held was acquired by another node no later than one TTL
// after the dead node's lease on it expired. A dead node's lane is free
// once its lease has expired and its heartbeat is a TTL old (placement
// then skips it); the time from the later of the two to the takeover is
// the detection delay, logged.
func checkMovedWithinTTL(t *testing.T, dsn, dead string, before map[string]leaseRow, beat time.Time) {
	t.Helper()
	names := make([]string, 0, len(before))
	for name := range before {
		names = append(names, name)
	}
	sort.Strings(names)
	after := readLeases(t, dsn, names)
	for _, name := range names {
		old, cur := before[name], after[name]
		if old.holder != dead {
			t.Fatalf("lease %s was held by %q when %s died, want %s", name, old.holder, dead, dead)
		}
		if cur.holder == dead || cur.holder == "" {
			t.Errorf("lease %s still held by %q after its lane was answered again", name, cur.holder)
			continue
		}
		late := cur.acquired.Sub(old.expires)
		if late > clusterTTL {
			t.Errorf("lease %s taken by %s %v after the dead node's lease expired, want within the lease TTL %v",
				name, cur.holder, late.Round(time.Millisecond), clusterTTL)
		}
		free := old.expires
		if gone := beat.Add(clusterTTL); gone.After(free) {
			free = gone
		}
		t.Logf("lease %s: taken by %s %v after the old lease expired, %v after the lane was free (lease expired, node no longer live)",
			name, cur.holder, late.Round(time.Millisecond), cur.acquired.Sub(free).Round(time.Millisecond))
	}
}

// clusterStatus runs `gatewayd cluster status` with a node's config.
func clusterStatus(t *testing.T, bin string, n *clusterProc) string {
	t.Helper()
	cmd := exec.Command(bin, "cluster", "status", "--config", n.cfgFile)
	cmd.Env = daemonEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cluster status: %v\n%s", err, out)
	}
	return string(out)
}

// waitOutboxSent waits until no outbox row is pending: every reply so far
// was delivered and recorded as sent.
func waitOutboxSent(t *testing.T, dsn string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	// No signal crosses the process boundary: the table is asked again.
	poll.Wait(30*time.Second, nil, func() bool {
		err = db.QueryRow(`SELECT count(*) FROM outbox WHERE state = 'pending'`).Scan(&n)
		return err != nil || n == 0
	})
	switch {
	case err != nil:
		t.Fatal(err)
	case n > 0:
		t.Fatalf("%d outbox rows still pending", n)
	}
}

// waitLeaseFree waits until lease name is free for node: released, expired
// or already its.
func waitLeaseFree(t *testing.T, dsn, name, node string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var free bool
	// No signal crosses the process boundary: the table is asked again.
	poll.Wait(30*time.Second, nil, func() bool {
		err = db.QueryRow(`SELECT holder = '' OR holder = $2 OR expires_at <= clock_timestamp()
			FROM cluster_leases WHERE name = $1`, name, node).Scan(&free)
		if errors.Is(err, sql.ErrNoRows) {
			free, err = true, nil
		}
		return err != nil || free
	})
	switch {
	case err != nil:
		t.Fatal(err)
	case !free:
		t.Fatalf("lease %s never handed over to %s", name, node)
	}
}

// slowModel is the fake model, echoing, except that a turn whose last user
// text has marker streams for two lease TTLs: long enough to kill or pause
// its node in the middle of it.
func slowModel(t *testing.T, marker string) *codextest.Model {
	model := codextest.NewModel(t)
	model.Respond(func(r codextest.Request) codextest.Reply {
		reply := codextest.DefaultReply(r)
		if strings.Contains(r.LastUserText(), marker) {
			reply.Chunks, reply.ChunkDelay = 3, 2*clusterTTL
		}
		return reply
	})
	return model
}

// slowOnceModel is slowModel whose slow turn is slow only the first time,
// so its rerun (/retry) answers at once.
func slowOnceModel(t *testing.T, marker string) *codextest.Model {
	model := codextest.NewModel(t)
	var slowed atomic.Bool
	model.Respond(func(r codextest.Request) codextest.Reply {
		reply := codextest.DefaultReply(r)
		if strings.Contains(r.LastUserText(), marker) && slowed.CompareAndSwap(false, true) {
			reply.Chunks, reply.ChunkDelay = 3, 2*clusterTTL
		}
		return reply
	})
	return model
}
