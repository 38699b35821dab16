package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// The question the fake model asks in each round, with request_user_input.
var clusterDBQuestion = codextest.AskedQuestion{ID: "db", Header: "Database",
	Question: "Which database?", Options: []string{"SQLite", "PostgreSQL"}}

// Deadlines of the cross-node test: how long after the owner asked its
// question the other node's stream may take to show it, and how long an
// answer may take to reach the model. Generous for a loaded 2-core
// machine, far below the question timeout the nodes are given.
const (
	relayWithin  = 20 * time.Second
	answerWithin = 40 * time.Second
)

// Two gatewayd processes on one PostgreSQL with the real codex: a lane
// owned by node-a, in Plan mode, streamed to on node-b. node-b's stream
// shows what the owner's turn does as it happens: Codex's question (a
// "question" event and its text as a "notice"), the reply in more than one
// "delta", and "done" with the reply. node-b lists the question, and an
// answer given on node-b, typed as a plain message (round 1) or posted to
// the question's route (round 2), reaches the model on node-a, once and
// not as a turn of its own, long before the question would time out.
func TestProcessClusterStreamAndQuestionsAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two daemons")
	}
	dsn := pgtest.Shared(t).NewDatabase(t)
	model := roundModel(t)
	bin := buildDaemon(t)
	ids := []string{"node-a", "node-b"}
	nodes := map[string]*clusterProc{}
	for _, id := range ids {
		n := writeClusterNodeWith(t, dsn, id, model, map[string]any{
			"cluster": map[string]any{"node_id": id, "lease_ttl": clusterTTL.String()},
		})
		// Far beyond the test's deadlines: an answer that reaches the
		// model came by the answer path, not by the timeout.
		setCodexKey(t, n, "question_timeout", "10m")
		nodes[id] = n.start(t, bin)
	}
	for _, id := range ids {
		waitHealthy(t, nodes[id].api, nodes[id].daemonProc)
	}
	owner, front := nodes["node-a"], nodes["node-b"]
	db := openTestDB(t, dsn)
	lane := laneOwnedBy(t, "plan-lane", owner.id, ids)
	key := apiLaneKey(t, lane)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	plan := <-postLane(front, lane, "plan-on", "/plan", false)
	if plan.err != nil || plan.code != http.StatusOK || !strings.Contains(plan.reply.Reply, "Plan mode is on") {
		t.Fatalf("/plan via %s: %d %v %q", front.id, plan.code, plan.err, plan.body)
	}

	// Round 1: the answer typed as a plain message on node-b.
	r1 := askRound(ctx, t, owner, front, lane, "ROUND-1", "stream-1", 1)
	checkListed(t, front, lane, r1.question)
	typed := postLane(front, lane, "answer-1", "PostgreSQL", false)
	if !r1.reached(model, "PostgreSQL") {
		r1.missed(t, model, db, "PostgreSQL", "answer-1")
	}
	r1.finish(t, "PostgreSQL")

	// Round 2: answered on node-b's question route.
	r2 := askRound(ctx, t, owner, front, lane, "ROUND-2", "stream-2", 2)
	checkListed(t, front, lane, r2.question)
	if r2.question == "" {
		t.Fatalf("round 2: no question id on %s to answer (no question event, none listed)", front.id)
	}
	code, body := answerOn(t, front, lane, r2.question, map[string][]string{clusterDBQuestion.ID: {"SQLite"}})
	var answered api.AnswerResponse
	if code != http.StatusOK || json.Unmarshal([]byte(body), &answered) != nil ||
		answered.ID != r2.question || !slices.Equal(answered.Answered, []string{clusterDBQuestion.ID}) {
		t.Errorf("round 2: POST questions/%s on %s: %d %s, want 200 answering [db]", r2.question, front.id, code, body)
	}
	if !r2.reached(model, "SQLite") {
		r2.missed(t, model, db, "SQLite", "")
	}
	r2.finish(t, "SQLite")

	for _, n := range nodes {
		if ended := logEvents(n.daemonProc, "question.ended", laneIs(key)); len(ended) != 0 {
			t.Errorf("%s gave up %d questions (timeout or withdrawal), want every one answered", n.id, len(ended))
		}
	}
	// Had the typed answer been queued as a message, it would have run
	// before round 2's, in the lane's order: by now.
	if n := countTurns(model, "PostgreSQL"); n != 0 {
		t.Errorf("the typed answer ran as a turn %d times, want never", n)
	}
	if state := inboxState(t, db, "answer-1"); state != "done" {
		t.Errorf("the typed answer's inbox row is %q, want done", state)
	}
	// Each reply is committed before its answer is recorded, so before
	// "done" was streamed: counted now, sent or not.
	for _, id := range []string{"stream-1", "stream-2"} {
		if n := replyRows(t, db, id); n != 1 {
			t.Errorf("message %s has %d replies, want exactly one", id, n)
		}
	}
	if n := replyRows(t, db, "answer-1"); n != 0 {
		t.Errorf("the typed answer has %d replies of its own, want none (it is no turn)", n)
	}
	// The typed answer's own POST waits for an answer of its own: the
	// owner's receipt, relayed as the recorded answer.
	select {
	case a := <-typed:
		if a.err != nil || a.code != http.StatusOK || !strings.Contains(a.reply.Reply, "Taken as your answer") {
			t.Errorf("the typed answer's own request: %d %v %.200q, want the receipt", a.code, a.err, a.body)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("the typed answer's own request is still open")
	}
	t.Logf("outbox rows of the lane still pending: %d (notices held on %s for no request there)",
		pendingRows(t, db, key), owner.id)
}

// clusterRound is one streamed message whose turn asks a question.
type clusterRound struct {
	name, msgID string
	lane        string
	owner       *clusterProc
	front       *clusterProc
	stream      *sseReader
	question    string // the question's id from front's stream ("" if none came)
}

// askRound streams round's message to lane on front and waits until the
// owner's codex asked its question (the owner's asked-th of the lane),
// then until front's stream shows it: a "question" event naming it and
// its text as a "notice". A stream without them is an error, and the
// round goes on without the id.
func askRound(ctx context.Context, t *testing.T, owner, front *clusterProc, lane, round, msgID string, asked int) *clusterRound {
	t.Helper()
	key := apiLaneKey(t, lane)
	r := &clusterRound{name: round, msgID: msgID, lane: lane, owner: owner, front: front}
	r.stream = openStream(ctx, front, lane, msgID, round+" which database should the service use?")
	if got := waitLogged(owner.daemonProc, "question.asked", laneIs(key), asked, answerWithin); len(got) < asked {
		t.Fatalf("%s: %s asked %d questions in lane %s, want %d (front %s logged %d)", round, owner.id, len(got), lane, asked,
			front.id, len(logEvents(front.daemonProc, "question.asked", laneIs(key))))
	}
	shown := r.stream.waitFor(relayWithin, func(events []sseEvent) bool {
		_, ok := firstQuestion(events)
		return ok && hasNotice(events, clusterDBQuestion.Question)
	})
	events, ended, err := r.stream.snapshot()
	if q, ok := firstQuestion(events); ok {
		r.question = q.ID
	}
	if !shown {
		t.Errorf("%s: %s's stream within %v of the question: question event %v, notice %v (events %v, ended %v %v)",
			round, front.id, relayWithin, r.question != "", hasNotice(events, clusterDBQuestion.Question), r.stream.counts(), ended, err)
	}
	return r
}

// checkListed checks that front lists the lane's open question, with the
// id its stream showed.
func checkListed(t *testing.T, front *clusterProc, lane, id string) {
	t.Helper()
	listed := pendingOn(t, front, lane)
	ids := make([]string, 0, len(listed))
	for _, q := range listed {
		ids = append(ids, q.ID)
	}
	if len(listed) != 1 || (id != "" && listed[0].ID != id) {
		t.Errorf("GET questions on %s lists %v, want the one open question %q", front.id, ids, id)
	}
}

// reached waits for the answer label to reach the model in round's
// follow-up request.
func (r *clusterRound) reached(model *codextest.Model, label string) bool {
	return poll.Wait(answerWithin, model.Changed, func() bool { return answeredWith(model, r.name, label) })
}

// missed logs what the round saw when its answer never reached the model,
// with what became of the message that carried it, and ends the test.
// To say what the other node's stream gets once the turn goes on, the
// question is then answered on its owner, where it waits.
func (r *clusterRound) missed(t *testing.T, model *codextest.Model, db *sql.DB, label, answerMsg string) {
	t.Helper()
	key := apiLaneKey(t, r.lane)
	onOwner := pendingOn(t, r.owner, r.lane)
	t.Logf("%s figures: %s stream %v; answer %q reached the model: false; pending on %s: %d, on %s: %d; "+
		"inbox %s=%q %s=%q; %q ran as a turn %d times; lane notices %q",
		r.name, r.front.id, r.stream.counts(), label, r.owner.id, len(onOwner),
		r.front.id, len(pendingOn(t, r.front, r.lane)), r.msgID, inboxState(t, db, r.msgID),
		answerMsg, inboxState(t, db, answerMsg), label, countTurns(model, label), laneNotices(t, db, key))
	if len(onOwner) == 1 {
		code, body := answerOn(t, r.owner, r.lane, onOwner[0].ID, map[string][]string{clusterDBQuestion.ID: {label}})
		r.stream.waitFor(answerWithin, func(events []sseEvent) bool {
			_, ok := doneOf(events)
			return ok
		})
		events, _, _ := r.stream.snapshot()
		done, _ := doneOf(events)
		ranAsTurn := 0
		if answerMsg != "" {
			poll.Wait(answerWithin, model.Changed, func() bool {
				ranAsTurn = countTurns(model, label)
				return ranAsTurn > 0
			})
		}
		t.Logf("%s after answering on %s (%d %s): %s stream %v, done reply %q; %q ran as a turn %d times (inbox %s=%q)",
			r.name, r.owner.id, code, strings.TrimSpace(body), r.front.id, r.stream.counts(), done.Reply,
			label, ranAsTurn, answerMsg, inboxState(t, db, answerMsg))
	}
	t.Fatalf("%s: the answer %q did not reach the model within %v", r.name, label, answerWithin)
}

// finish waits for the stream to end with "done" and the model's reply
// after the answer label, checks the deltas, and logs the round's figures.
func (r *clusterRound) finish(t *testing.T, label string) {
	t.Helper()
	r.stream.waitFor(answerWithin, func(events []sseEvent) bool {
		_, ok := doneOf(events)
		return ok
	})
	events, ended, err := r.stream.snapshot()
	counts := r.stream.counts()
	want := roundReply(r.name, `{"answers":{"db":{"answers":["`+label+`"]}}}`)
	done, ok := doneOf(events)
	switch {
	case !ok:
		t.Errorf("%s: %s's stream has no done event (ended %v, %v): %v", r.name, r.front.id, ended, err, counts)
	case done.Reply != want || done.ID != r.msgID:
		t.Errorf("%s: done = %q to %s, want %q to %s", r.name, done.Reply, done.ID, want, r.msgID)
	}
	// Every delta and replace, in order, rebuild the reply the model
	// streamed; more than one delta means the owner's preview was seen
	// here while it grew, not only the final text.
	if counts["delta"] < 2 {
		t.Errorf("%s: %s's stream has %d delta events, want more than one (the reply streamed in 4 parts over 2 s)",
			r.name, r.front.id, counts["delta"])
	}
	// A request on the owner shows each notice once; so must one here.
	notices := noticesOf(events)
	for i, n := range notices {
		if slices.Index(notices, n) != i {
			t.Errorf("%s: %s's stream shows a notice %d times, want once: %q",
				r.name, r.front.id, countOf(notices, n), n)
			break
		}
	}
	if got := rebuilt(events); ok && got != done.Reply {
		t.Errorf("%s: the deltas rebuild %q, want the reply %q", r.name, got, done.Reply)
	}
	t.Logf("%s figures: %s stream %v; answer %q reached the model: true; question id %q; notices %q",
		r.name, r.front.id, counts, label, r.question, notices)
}

// roundReply is the model's text after round's question was answered with
// toolOutput: long, and streamed in several deltas (roundModel), so the
// lane's preview is edited more than once.
func roundReply(round, toolOutput string) string {
	return round + " plan, step one: pick the store. Step two: write the schema. " +
		"Step three: migrate the data. Step four: ship it. TOOL OUTPUT: " + toolOutput
}

// roundModel is the fake model of the cross-node question test: a user
// message starting with "ROUND-" is answered with a request_user_input
// call (clusterDBQuestion); its follow-up, carrying the answers, with
// roundReply in four deltas half a second apart, which spans more than one
// preview interval (1 s). Anything else is echoed.
func roundModel(t *testing.T) *codextest.Model {
	model := codextest.NewModel(t)
	model.Respond(func(r codextest.Request) codextest.Reply {
		round, ok := roundOf(r.LastUserText())
		if !ok || r.IsCompaction() {
			return codextest.DefaultReply(r)
		}
		out, followUp := r.ToolOutput()
		if !followUp {
			return codextest.Reply{ToolCall: codextest.AskUser("call_"+round, clusterDBQuestion)}
		}
		return codextest.Reply{Text: roundReply(round, out), Chunks: 4, ChunkDelay: 500 * time.Millisecond}
	})
	return model
}

// roundOf is the round a user text starts, "ROUND-n".
func roundOf(text string) (string, bool) {
	if !strings.HasPrefix(text, "ROUND-") {
		return "", false
	}
	round, _, _ := strings.Cut(text, " ")
	return round, true
}

// answeredWith reports whether the model got round's follow-up carrying
// label as the answer to the db question.
func answeredWith(model *codextest.Model, round, label string) bool {
	want := `"db":{"answers":["` + label + `"]}`
	for _, r := range model.Requests() {
		out, ok := r.ToolOutput()
		if got, _ := roundOf(r.LastUserText()); ok && got == round && strings.Contains(out, want) {
			return true
		}
	}
	return false
}

// countTurns counts the model requests whose last user text is text: a
// message run as a turn of its own.
func countTurns(model *codextest.Model, text string) int {
	n := 0
	for _, r := range model.Requests() {
		if strings.TrimSpace(r.LastUserText()) == text {
			n++
		}
	}
	return n
}

// sseEvent is one server-sent event: its name and its data line.
type sseEvent struct{ name, data string }

// sseReader reads a streamed answer while the request is open, so a test
// can wait on the events one by one.
type sseReader struct {
	mu     sync.Mutex
	code   int
	events []sseEvent
	ended  bool
	err    error
	wake   poll.Broadcast
}

// openStream posts text as message id to lane on node n, asking for
// server-sent events, and reads the answer in the background until it
// ends or ctx does.
func openStream(ctx context.Context, n *clusterProc, lane, id, text string) *sseReader {
	s := &sseReader{}
	go func() {
		err := s.read(ctx, n, lane, id, text)
		s.mu.Lock()
		s.ended, s.err = true, err
		s.mu.Unlock()
		s.wake.Notify()
	}()
	return s
}

func (s *sseReader) read(ctx context.Context, n *clusterProc, lane, id, text string) error {
	b, _ := json.Marshal(map[string]string{"text": text, "id": id})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.api.Base+"/api/lanes/"+lane+"/messages", strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+n.api.Token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	s.mu.Lock()
	s.code = resp.StatusCode
	s.mu.Unlock()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("status %d: %s", resp.StatusCode, raw)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && cur.name != "":
			s.mu.Lock()
			s.events = append(s.events, cur)
			s.mu.Unlock()
			s.wake.Notify()
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return sc.Err()
}

// snapshot is what was read so far and whether the stream ended (and how).
func (s *sseReader) snapshot() (events []sseEvent, ended bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events), s.ended, s.err
}

// waitFor waits until cond holds for the events read, or the stream ends
// or within passes; it reports whether cond held.
func (s *sseReader) waitFor(within time.Duration, cond func([]sseEvent) bool) bool {
	held := false
	poll.Wait(within, s.wake.Wait, func() bool {
		events, ended, _ := s.snapshot()
		held = cond(events)
		return held || ended
	})
	return held
}

// counts are the events read so far, by name.
func (s *sseReader) counts() map[string]int {
	events, _, _ := s.snapshot()
	out := map[string]int{}
	for _, e := range events {
		out[e.name]++
	}
	return out
}

// rebuilt is the text the stream's delta and replace events build.
func rebuilt(events []sseEvent) string {
	var text string
	for _, e := range events {
		var s string
		if (e.name != "delta" && e.name != "replace") || json.Unmarshal([]byte(e.data), &s) != nil {
			continue
		}
		if e.name == "replace" {
			text = s
		} else {
			text += s
		}
	}
	return text
}

// firstQuestion is the first "question" event naming clusterDBQuestion.
func firstQuestion(events []sseEvent) (api.Question, bool) {
	for _, e := range events {
		var q api.Question
		if e.name != "question" || json.Unmarshal([]byte(e.data), &q) != nil {
			continue
		}
		for _, ask := range q.Questions {
			if ask.ID == clusterDBQuestion.ID && ask.Question == clusterDBQuestion.Question {
				return q, true
			}
		}
	}
	return api.Question{}, false
}

// noticesOf are the texts of the stream's "notice" events.
func noticesOf(events []sseEvent) []string {
	var out []string
	for _, e := range events {
		var notice string
		if e.name == "notice" && json.Unmarshal([]byte(e.data), &notice) == nil {
			out = append(out, notice)
		}
	}
	return out
}

// countOf counts s in list.
func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// hasNotice reports whether a "notice" event carries text.
func hasNotice(events []sseEvent, text string) bool {
	for _, e := range events {
		var notice string
		if e.name == "notice" && json.Unmarshal([]byte(e.data), &notice) == nil && strings.Contains(notice, text) {
			return true
		}
	}
	return false
}

// doneOf is the Response of the stream's "done" event.
func doneOf(events []sseEvent) (api.Response, bool) {
	for _, e := range events {
		var r api.Response
		if e.name == "done" && json.Unmarshal([]byte(e.data), &r) == nil {
			return r, true
		}
	}
	return api.Response{}, false
}

// setCodexKey adds key to the codex section of node n's config, written
// but not yet started: writeClusterNodeWith owns that section.
func setCodexKey(t *testing.T, n *clusterProc, key string, value any) {
	t.Helper()
	raw, err := os.ReadFile(n.cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["codex"].(map[string]any)[key] = value
	writeProcessConfig(t, n.dir, cfg)
}

// laneOwnedBy is an API lane that rendezvous placement over nodes gives
// to owner.
func laneOwnedBy(t *testing.T, prefix, owner string, nodes []string) string {
	t.Helper()
	for i := range 200 {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if got, err := cluster.Place(apiLaneKey(t, name), nodes); err == nil && got == owner {
			return name
		}
	}
	t.Fatalf("no lane placed on %s found; pick other names", owner)
	return ""
}

// pendingOn lists lane's pending questions as node n's API shows them.
func pendingOn(t *testing.T, n *clusterProc, lane string) []api.Question {
	t.Helper()
	var out struct {
		Questions []api.Question `json:"questions"`
	}
	if err := n.api.Do(context.Background(), http.MethodGet, "/api/lanes/"+lane+"/questions", nil, &out); err != nil {
		t.Fatalf("GET questions of %s on %s: %v", lane, n.id, err)
	}
	return out.Questions
}

// answerOn posts answers to question id of lane on node n and returns the
// status and body.
func answerOn(t *testing.T, n *clusterProc, lane, id string, answers map[string][]string) (int, string) {
	t.Helper()
	req, err := n.api.Request(context.Background(), http.MethodPost, "/api/lanes/"+lane+"/questions/"+id,
		map[string]any{"answers": answers, "user": "local"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := n.api.Send(req)
	if err != nil {
		t.Fatalf("answer %s on %s: %v", id, n.id, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// inboxState is the state of API message id's inbox row, "" if none.
func inboxState(t *testing.T, db *sql.DB, id string) string {
	t.Helper()
	var state string
	err := db.QueryRow(`SELECT state FROM inbox WHERE platform = $1 AND message_id = $2`, api.PlatformName, id).Scan(&state)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return state
}

// laneNotices are the texts of the notices queued for the lane, in order.
func laneNotices(t *testing.T, db *sql.DB, key string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT text FROM outbox WHERE session_key = $1 AND out_kind = 'notice' ORDER BY id`, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			t.Fatal(err)
		}
		out = append(out, text)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pendingRows counts the lane's outbox rows not yet sent.
func pendingRows(t *testing.T, db *sql.DB, key string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM outbox WHERE session_key = $1 AND state = 'pending'`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// replyRows counts the outbox rows answering message id as its reply (not
// notices).
func replyRows(t *testing.T, db *sql.DB, id string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM outbox WHERE reply_to = $1 AND out_kind = 'reply'`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
