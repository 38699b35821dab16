package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

// apiAnswer is what a POST to a node's API lane got.
type apiAnswer struct {
	code  int
	hdr   http.Header
	body  string
	err   error
	reply api.Response // the JSON body, or the SSE "done" event's data
}

// postLane posts text as message id to lane on node n, as JSON or SSE, in
// the background.
func postLane(n *clusterProc, lane, id, text string, stream bool) <-chan apiAnswer {
	ch := make(chan apiAnswer, 1)
	go func() {
		b, _ := json.Marshal(map[string]string{"text": text, "id": id})
		req, _ := http.NewRequest(http.MethodPost, n.api.Base+"/api/lanes/"+lane+"/messages", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+n.api.Token)
		if stream {
			req.Header.Set("Accept", "text/event-stream")
		}
		resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
		if err != nil {
			ch <- apiAnswer{err: err}
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		a := apiAnswer{code: resp.StatusCode, hdr: resp.Header, body: string(raw), err: err}
		data := a.body
		if stream {
			data = sseData(a.body, "done")
		}
		if a.code == http.StatusOK {
			a.err = json.Unmarshal([]byte(data), &a.reply)
		}
		ch <- a
	}()
	return ch
}

// sseData is the data of the first event named event in stream.
func sseData(stream, event string) string {
	sc := bufio.NewScanner(strings.NewReader(stream))
	cur := ""
	for sc.Scan() {
		if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			cur = e
		} else if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && cur == event {
			return d
		}
	}
	return ""
}

// apiLaneKey is the session key of API lane name.
func apiLaneKey(t *testing.T, name string) string {
	key, ok := api.LaneSessionKey(name)
	if !ok {
		t.Fatalf("bad lane name %q", name)
	}
	return key
}

// repliesTo counts the outbox rows answering message id, and how many of
// them were sent.
func repliesTo(t *testing.T, db *sql.DB, id string) (rows, sent int) {
	t.Helper()
	err := db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE state = 'sent') FROM outbox WHERE reply_to = $1`, id).
		Scan(&rows, &sent)
	if err != nil {
		t.Fatal(err)
	}
	return rows, sent
}

// Three gatewayd processes on one PostgreSQL with the real codex: API
// requests for lanes another node owns are answered by the node they were
// sent to (JSON and SSE), each message run and answered once; and a
// request whose lane's owner is killed mid-turn ends with the new owner's
// answer or a 503 with Retry-After, never a hang.
func TestProcessClusterAPIOnAnyNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three daemons")
	}
	dsn := pgtest.Shared(t).NewDatabase(t)
	tg := telegramtest.New(t)
	const slow = "SLOW-API-TURN"
	model := slowModel(t, slow)
	bin := buildDaemon(t)
	ids := []string{"node-a", "node-b", "node-c"}
	nodes := map[string]*clusterProc{}
	for _, id := range ids {
		nodes[id] = startClusterNode(t, bin, dsn, id, tg, model, []string{"1"})
	}
	for _, id := range ids {
		waitHealthy(t, nodes[id].api, nodes[id].daemonProc)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// Lanes owned by node-b or node-c, each sent to node-a; the last one's
	// owner is node-b and, once node-b dies, node-c.
	var lanes []string
	var doomed string
	for i := 0; i < 200 && (len(lanes) < 4 || doomed == ""); i++ {
		name := fmt.Sprintf("lane-%d", i)
		owner, _ := cluster.Place(apiLaneKey(t, name), ids)
		next, _ := cluster.Place(apiLaneKey(t, name), []string{"node-a", "node-c"})
		switch {
		case owner == "node-b" && next == "node-c" && doomed == "":
			doomed = name
		case owner != "node-a" && len(lanes) < 4:
			lanes = append(lanes, name)
		}
	}
	if len(lanes) < 4 || doomed == "" {
		t.Fatal("no lanes placed off node-a found; pick other names")
	}
	front := nodes["node-a"]

	// 1: several lanes at once, JSON and SSE, all to the node owning none.
	results := map[string]<-chan apiAnswer{}
	for i, lane := range lanes {
		results[lane] = postLane(front, lane, "msg-"+lane, "hello from "+lane, i%2 == 1)
	}
	for i, lane := range lanes {
		a := <-results[lane]
		if a.err != nil || a.code != http.StatusOK {
			t.Fatalf("lane %s via node-a: %d %v %q", lane, a.code, a.err, a.body)
		}
		if want := "ECHO: hello from " + lane; a.reply.Reply != want || a.reply.ID != "msg-"+lane {
			t.Errorf("lane %s: answer %+v, want reply %q to msg-%s", lane, a.reply, want, lane)
		}
		if i%2 == 1 && !strings.Contains(a.body, "event: delta\n") {
			t.Errorf("lane %s: stream %q has no delta event", lane, a.body)
		}
		if got := logEvents(front.daemonProc, "cluster.lane_taken", laneIs(apiLaneKey(t, lane))); len(got) != 0 {
			t.Errorf("node-a took lane %s, placed elsewhere", lane)
		}
	}
	waitOutboxSent(t, dsn)
	for _, lane := range lanes {
		if rows, sent := repliesTo(t, db, "msg-"+lane); rows != 1 || sent != 1 {
			t.Errorf("lane %s: %d replies (%d sent), want exactly one", lane, rows, sent)
		}
	}

	// 2: node-b killed in the middle of a turn of a lane it owns, asked on
	// node-a.
	res := postLane(front, doomed, "msg-doomed", slow+" please", false)
	tg.WaitFor(60*time.Second, "the slow turn reaching the model", func() bool {
		_, ok := model.LastRequestWith(slow)
		return ok
	})
	nodes["node-b"].kill9(t)
	a := <-res
	switch {
	case a.err == nil && a.code == http.StatusOK:
		if rows, _ := repliesTo(t, db, "msg-doomed"); rows != 1 {
			t.Errorf("the rerun message has %d replies, want 1", rows)
		}
	case a.code == http.StatusServiceUnavailable && a.hdr.Get("Retry-After") != "" && strings.Contains(a.body, "send it again"):
		t.Logf("owner killed mid-turn: %d %s", a.code, strings.TrimSpace(a.body))
	default:
		t.Fatalf("request whose owner died: %d %v %q; want the answer or 503 with Retry-After", a.code, a.err, a.body)
	}
	if got := waitLogEvents(t, nodes["node-c"].daemonProc, "cluster.lane_taken", laneIs(apiLaneKey(t, doomed))); len(got) == 0 {
		t.Errorf("node-c did not take lane %s after node-b died", doomed)
	}

	// 3: the lane works again through node-a, now answered by node-c.
	again := <-postLane(front, doomed, "msg-after", "after the kill", true)
	if again.err != nil || again.code != http.StatusOK || again.reply.Reply != "ECHO: after the kill" {
		t.Fatalf("lane %s after the kill: %d %v %q", doomed, again.code, again.err, again.body)
	}
}
