package main

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestProcessEverySurvivesKillNine: a lane's /every schedule fires on its
// grid, goes on after kill -9 and a restart, and each due time runs once:
// the database holds one firing per due time and the model sees each at
// most once (a firing cut off by the kill is told, not run again). It
// logs the delay from each due time to the model's request.
func TestProcessEverySurvivesKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	model := codextest.NewModel(t)
	var mu sync.Mutex
	var seen []time.Time                // when the model got each firing's request
	firing := make(chan struct{}, 1024) // one signal per firing the model got
	model.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), "tick of the clock") {
			mu.Lock()
			seen = append(seen, time.Now())
			mu.Unlock()
			firing <- struct{}{}
		}
		return codextest.DefaultReply(req)
	})
	bin := buildDaemon(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	cfgFile := processConfig(t, dir, addr, model, map[string]any{
		"schedules": map[string]any{"min_interval": "1s", "catch_up": "1h"},
	})
	api := &client.API{Base: "http://" + addr, HTTP: &http.Client{Timeout: 2 * time.Minute}}

	d1 := startDaemon(t, bin, cfgFile, dir, "run1", "")
	waitHealthy(t, api, d1)
	if got := post(t, api, "clock", "/every 2s tick of the clock"); !strings.Contains(got.Reply, "⏰ Scheduled s1, every 2s") {
		t.Fatalf("/every answered %+v", got)
	}
	waitLogEvents(t, d1, "schedule.fired", func(e map[string]any) bool { return len(logEvents(d1, "schedule.fired", nil)) >= 2 })
	d1.kill9(t)
	for drained := false; !drained; { // what run 1's firings signalled
		select {
		case <-firing:
		default:
			drained = true
		}
	}

	d2 := startDaemon(t, bin, cfgFile, dir, "run2", "")
	waitHealthy(t, api, d2)
	waitLogEvents(t, d2, "schedule.fired", func(e map[string]any) bool { return len(logEvents(d2, "schedule.fired", nil)) >= 2 })
	select {
	case <-firing:
	case <-time.After(time.Minute):
		t.Fatalf("no firing reached the model after the restart\n%s", d2.logs())
	}
	if got := post(t, api, "clock", "/unschedule s1"); !strings.Contains(got.Reply, "Removed s1") {
		t.Errorf("/unschedule answered %+v", got)
	}
	if code := d2.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}

	dues := firingDues(t, filepath.Join(dir, "state", "gatewayd.db"))
	fired := len(logEvents(d1, "schedule.fired", nil)) + len(logEvents(d2, "schedule.fired", nil))
	if len(dues) != fired {
		t.Errorf("%d firings logged, %d in the database", fired, len(dues))
	}
	for i := 1; i < len(dues); i++ {
		if gap := dues[i].Sub(dues[i-1]); gap <= 0 || gap%(2*time.Second) != 0 {
			t.Errorf("firings %s and %s are not distinct points of the 2s grid", dues[i-1], dues[i])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) > len(dues) {
		t.Errorf("the model saw %d firings, the database holds %d: a firing ran twice", len(seen), len(dues))
	}
	var delays []string
	for _, at := range seen {
		for j := len(dues) - 1; j >= 0; j-- {
			if !dues[j].After(at) {
				delays = append(delays, at.Sub(dues[j]).Round(time.Millisecond).String())
				break
			}
		}
	}
	t.Logf("due time → model request, per firing: %s", strings.Join(delays, " "))
}

// firingDues reads the due times of the firings in the inbox, in order.
func firingDues(t *testing.T, path string) []time.Time {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), "SELECT message_id FROM inbox WHERE message_id LIKE 'schedule:%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var dues []time.Time
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(id, ":")
		ns, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		if err != nil {
			t.Fatalf("firing id %q: %v", id, err)
		}
		dues = append(dues, time.Unix(0, ns))
	}
	sort.Slice(dues, func(i, j int) bool { return dues[i].Before(dues[j]) })
	return dues
}
