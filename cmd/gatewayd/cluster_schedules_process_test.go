package main

import (
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestProcessClusterScheduleFiresOnceAndMovesWithItsLane: on two nodes
// sharing PostgreSQL, a lane's /every schedule fires on the node serving
// the lane, never on both; after that node is killed the other fires it,
// and every due time is one inbox row.
func TestProcessClusterScheduleFiresOnceAndMovesWithItsLane(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two daemons")
	}
	dsn := pgtest.Shared(t).NewDatabase(t)
	tg := telegramtest.New(t)
	model := codextest.NewModel(t)
	bin := buildDaemon(t)
	ids := []string{"node-a", "node-b"}
	chat := chatPlacedOn(t, "node-a", ids)
	users := []string{strconv.FormatInt(chat, 10)}
	nodes := map[string]*clusterProc{}
	for _, id := range ids {
		nodes[id] = writeClusterNodeWith(t, dsn, id, model, map[string]any{
			"cluster": map[string]any{"node_id": id, "lease_ttl": clusterTTL.String()},
			"telegram": map[string]any{"token": telegramtest.Token, "api_url": tg.URL, "allowed_users": users,
				"poll_timeout": "1s"},
			"schedules": map[string]any{"min_interval": "1s"},
		}).start(t, bin)
	}
	for _, id := range ids {
		waitHealthy(t, nodes[id].api, nodes[id].daemonProc)
	}
	dm := models.Chat{ID: chat, Type: models.ChatTypePrivate}
	tg.Text(dm, models.User{ID: chat, FirstName: "Ana"}, 0, "/every 2s tick of the cluster clock", nil)
	fired := func(n *clusterProc) int { return len(logEvents(n.daemonProc, "schedule.fired", laneIs(dmKey(chat)))) }
	owner, other := nodes["node-a"], nodes["node-b"]
	tg.WaitFor(60*time.Second, "three firings on the lane's node", func() bool { return fired(owner) >= 3 })
	if n := fired(other); n != 0 {
		t.Errorf("the node not serving the lane fired %d times while its owner was up", n)
	}
	owner.kill9(t)
	tg.WaitFor(90*time.Second, "firings on the surviving node", func() bool { return fired(other) >= 2 })
	waitLogEvents(t, other.daemonProc, "cluster.lane_taken", laneIs(dmKey(chat)))

	db := openTestDB(t, dsn)
	dues := map[string]int{}
	rows, err := db.Query("SELECT message_id FROM inbox WHERE message_id LIKE 'schedule:%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id sql.NullString
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		dues[id.String]++
	}
	if total := fired(owner) + fired(other); len(dues) < total-1 { // the last firing may commit after the count
		t.Errorf("%d firings logged over both nodes, %d in the inbox", total, len(dues))
	}
	for id, n := range dues {
		if n != 1 || !strings.HasPrefix(id, "schedule:1:") {
			t.Errorf("inbox row %s ×%d, want each due time once", id, n)
		}
	}
}

// chatPlacedOn is a private chat that rendezvous placement over nodes puts
// on node.
func chatPlacedOn(t *testing.T, node string, nodes []string) int64 {
	t.Helper()
	for chat := int64(7001); chat < 8000; chat++ {
		if owner, err := cluster.Place(dmKey(chat), nodes); err == nil && owner == node {
			return chat
		}
	}
	t.Fatal("no chat placed on " + node)
	return 0
}
