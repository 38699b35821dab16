package main

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

// pressWithin bounds each wait of the press test: generous for a loaded
// 2-core machine, far below the question timeout the nodes are given, and
// short enough that a press that never reaches the owner fails the test
// well inside its wall time.
const pressWithin = 30 * time.Second

// noLongerWaiting starts what a node says of a press for a question it
// does not hold.
const noLongerWaiting = "is no longer waiting"

// Two gatewayd processes on one PostgreSQL, the real codex and one fake
// Telegram. Telegram is polled by one of them; a DM placed on the other
// is put in Plan mode and its model asks "Which database?" with buttons.
// The user's press reaches the poller, which hands it to the lane's owner:
// the model's follow-up carries the chosen label long before the question
// would time out, the question's message shows the answer, the reply
// arrives once, and nobody is told the question is no longer waiting.
func TestProcessClusterButtonPressedOnThePollerReachesTheOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two daemons")
	}
	dsn := pgtest.Shared(t).NewDatabase(t)
	tg := telegramtest.New(t)
	model := roundModel(t)
	bin := buildDaemon(t)
	ids := []string{"node-a", "node-b"}
	// The poller is elected at start-up, so each node gets a chat of its
	// own and the one placed on the node that does not poll is used.
	chats := dmPlacedOn(t, ids)
	var users []string
	for _, c := range chats {
		users = append(users, strconv.FormatInt(c, 10))
	}
	nodes := map[string]*clusterProc{}
	for _, id := range ids {
		n := writeClusterNode(t, dsn, id, clusterTTL, tg, model, users)
		// Far beyond the test's deadlines: an answer that reaches the
		// model came by the press, not by the timeout.
		setCodexKey(t, n, "question_timeout", "10m")
		nodes[id] = n.start(t, bin)
	}
	for _, id := range ids {
		waitHealthy(t, nodes[id].api, nodes[id].daemonProc)
	}
	db := openTestDB(t, dsn)
	poller := nodes[waitPollerElected(t, db)]
	var owner *clusterProc
	for _, id := range ids {
		if id != poller.id {
			owner = nodes[id]
		}
	}
	chat := chats[owner.id]
	key := dmKey(chat)
	dm := models.Chat{ID: chat, Type: models.ChatTypePrivate}
	tg.Chat(dm)
	user := models.User{ID: chat, FirstName: "Dana"}

	tg.Text(dm, user, 0, "/plan", nil)
	tg.WaitFor(pressWithin, "the /plan answer", func() bool { return countWith(tg.Messages(chat, -1), "Plan mode is on") == 1 })
	if got := waitLogEvents(t, owner.daemonProc, "cluster.lane_taken", laneIs(key)); len(got) == 0 {
		t.Fatalf("%s did not take lane %s, placed on it (poller %s)", owner.id, key, poller.id)
	}
	tg.Text(dm, user, 0, "ROUND-1 which database should the service use?", nil)
	question := waitQuestionMessage(t, tg, chat, clusterDBQuestion.Question)
	data, ok := buttonData(question, "PostgreSQL")
	if !ok {
		t.Fatalf("the question message has no PostgreSQL button: %s", question.Markup)
	}

	pressed := time.Now()
	tg.Press(user, question, data)
	if !poll.Wait(pressWithin, model.Changed, func() bool { return answeredWith(model, "ROUND-1", "PostgreSQL") }) {
		pressMissed(t, tg, db, chat, key, poller, owner)
	}
	reachedAt := time.Now()

	if got := waitLogEvents(t, poller.daemonProc, "inbound.press_forwarded", laneIs(key)); len(got) == 0 {
		t.Errorf("the poller %s did not log inbound.press_forwarded for %s", poller.id, key)
	}
	checkAnsweredAndReplied(t, tg, dsn, chat, question.ID)
	for _, n := range nodes {
		if ended := logEvents(n.daemonProc, "question.ended", laneIs(key)); len(ended) != 0 {
			t.Errorf("%s gave the question up (timeout or withdrawal): %v", n.id, ended)
		}
	}
	if now := leaseHolder(t, db, cluster.PollerLease); now != poller.id {
		t.Errorf("telegram:poller is held by %q after the press, want %s throughout", now, poller.id)
	}
	t.Logf("press %s on the poller %s for lane %s run by %s: press → answer at the model %v",
		data, poller.id, key, owner.id, reachedAt.Sub(pressed).Round(time.Millisecond))
}

// checkAnsweredAndReplied checks the chat after the answer: the question's
// message shows it without buttons, the reply with the answer arrives
// once, and no "no longer waiting" was told.
func checkAnsweredAndReplied(t *testing.T, tg *telegramtest.Server, dsn string, chat int64, questionID int) {
	t.Helper()
	reply := roundReply("ROUND-1", `{"answers":{"db":{"answers":["PostgreSQL"]}}}`)
	tg.WaitFor(pressWithin, "the reply after the answer", func() bool { return countWith(tg.Messages(chat, -1), reply) > 0 })
	tg.WaitFor(pressWithin, "the question's message showing the answer", func() bool {
		m, ok := messageByID(tg.Messages(chat, -1), questionID)
		return ok && strings.Contains(m.Text, "✅ PostgreSQL")
	})
	waitOutboxSent(t, dsn)
	msgs := tg.Messages(chat, -1)
	if m, _ := messageByID(msgs, questionID); strings.Contains(m.Markup, "question:") {
		t.Errorf("the answered question still has buttons: %q, markup %s", m.Text, m.Markup)
	}
	if n := countWith(msgs, "ROUND-1 plan, step one"); n != 1 {
		t.Errorf("the reply arrived %d times, want once: %q", n, texts(msgs))
	}
	if n := countWith(msgs, noLongerWaiting); n != 0 {
		t.Errorf("the chat was told %d times that the question is no longer waiting: %q", n, texts(msgs))
	}
}

// pressMissed ends the test when the press never reached the model, with
// what became of it: what the chat was told, what each node logged of the
// question and the press.
func pressMissed(t *testing.T, tg *telegramtest.Server, db *sql.DB, chat int64, key string, poller, owner *clusterProc) {
	t.Helper()
	msgs := tg.Messages(chat, -1)
	count := func(n *clusterProc, event string) int { return len(logEvents(n.daemonProc, event, laneIs(key))) }
	t.Logf("press missed: chat told %q %d times; %s (poller) asked %d, answered %d, forwarded %d; "+
		"%s (owner) asked %d, answered %d, ended %d; lane lease held by %q; chat %q",
		noLongerWaiting, countWith(msgs, noLongerWaiting), poller.id, count(poller, "question.asked"),
		count(poller, "question.answered"), count(poller, "inbound.press_forwarded"), owner.id,
		count(owner, "question.asked"), count(owner, "question.answered"), count(owner, "question.ended"),
		leaseHolder(t, db, cluster.LanePrefix+key), texts(msgs))
	t.Fatalf("the PostgreSQL press on %s did not reach the model on %s within %v", poller.id, owner.id, pressWithin)
}

// dmPlacedOn is, for each node, a private chat whose lane rendezvous
// placement over nodes gives it.
func dmPlacedOn(t *testing.T, nodes []string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for chat := int64(7001); chat < 8000 && len(out) < len(nodes); chat++ {
		owner, err := cluster.Place(dmKey(chat), nodes)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := out[owner]; !ok {
			out[owner] = chat
		}
	}
	if len(out) < len(nodes) {
		t.Fatalf("no chat placed on every node: %v", out)
	}
	return out
}

// waitPollerElected waits until a node holds telegram:poller and returns
// it.
func waitPollerElected(t *testing.T, db *sql.DB) string {
	t.Helper()
	var holder string
	// No signal crosses the process boundary: the table is asked again.
	poll.Wait(pressWithin, nil, func() bool {
		holder = leaseHolder(t, db, cluster.PollerLease)
		return holder != ""
	})
	if holder == "" {
		t.Fatalf("no node holds %s", cluster.PollerLease)
	}
	return holder
}

// waitQuestionMessage waits for the bot's message in chat asking question
// with buttons.
func waitQuestionMessage(t *testing.T, tg *telegramtest.Server, chat int64, question string) telegramtest.Message {
	t.Helper()
	var found telegramtest.Message
	tg.WaitFor(pressWithin, "the question with buttons", func() bool {
		for _, m := range tg.Messages(chat, -1) {
			if strings.Contains(m.Text, question) && strings.Contains(m.Markup, `"question:`) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// buttonData is the callback data of msg's button whose label has label.
func buttonData(msg telegramtest.Message, label string) (string, bool) {
	var kb models.InlineKeyboardMarkup
	if json.Unmarshal([]byte(msg.Markup), &kb) != nil {
		return "", false
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if strings.Contains(b.Text, label) {
				return b.CallbackData, true
			}
		}
	}
	return "", false
}

// messageByID is the bot message id among msgs.
func messageByID(msgs []telegramtest.Message, id int) (telegramtest.Message, bool) {
	for _, m := range msgs {
		if m.ID == id {
			return m, true
		}
	}
	return telegramtest.Message{}, false
}

// countWith counts the messages whose visible text has s.
func countWith(msgs []telegramtest.Message, s string) int {
	n := 0
	for _, m := range msgs {
		if strings.Contains(m.Text, s) {
			n++
		}
	}
	return n
}
