package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// kill -9 while a turn's commit waits for the database (its write lock
// held by another process past the store's retries), after the model
// answered: the next start commits the spooled turn, so the lane gets
// Codex's answer, once, and is not told the turn was cut off. Before, the
// reply lived only in memory and the next start told the lane its message
// was cut off.
func TestProcessKillNineDuringADatabaseOutageKeepsTheReply(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	t.Parallel()
	model := codextest.NewModel(t)
	bin := buildDaemon(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	state := filepath.Join(dir, "state")
	cfgFile := writeProcessConfig(t, dir, map[string]any{
		"state_dir": state,
		"log":       map[string]any{"level": "info", "format": "json"},
		"codex": map[string]any{
			"command": codextest.CodexBinary(t), "args": codextest.SandboxArgs(model.URL), "home": codextest.Home(t),
			"isolation": "none", "start_timeout": "60s",
		},
		"api": map[string]any{"listen": addr, "token": "test-token"},
	})
	notify := listenNotify(t)
	api := &client.API{Base: "http://" + addr, Token: "test-token", HTTP: &http.Client{Timeout: 3 * time.Minute}}
	d1 := startDaemon(t, bin, cfgFile, dir, "run1", notify.path)
	waitHealthy(t, api, d1)

	// The model answers only once the test holds the database's write lock.
	locked := make(chan struct{})
	model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), "OUTAGE") {
			<-locked
		}
		return codextest.DefaultReply(req)
	})
	before := len(model.Requests())
	go func() {
		req, err := api.Request(context.Background(), http.MethodPost, "/api/lanes/spool/messages",
			map[string]string{"text": "answer during the OUTAGE", "user": "tester", "id": "m-outage"})
		if err == nil {
			if resp, err := api.Send(req); err == nil {
				resp.Body.Close()
			}
		}
	}() // fails when the daemon dies
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := model.WaitRequests(ctx, before+1); err != nil {
		t.Fatalf("the turn never reached the model: %v", err)
	}
	release := holdWriteLock(t, filepath.Join(state, "gatewayd.db"))
	close(locked)
	if got := waitLogged(d1, "turn.commit_waiting", laneIs("v1:api:spool"), 1, 2*time.Minute); len(got) == 0 {
		t.Fatalf("the commit never waited for the database:\n%s", d1.logs())
	}
	d1.kill9(t)
	release()
	model.Respond(nil)

	d2 := startDaemon(t, bin, cfgFile, dir, "run2", notify.path)
	waitHealthy(t, api, d2)
	if n := len(logEvents(d2, "recover.spooled_reply", laneIs("v1:api:spool"))); n != 1 {
		t.Errorf("recover.spooled_reply for the lane = %d, want 1", n)
	}
	if n := len(logEvents(d2, "recover.cut_off", laneIs("v1:api:spool"))); n != 0 {
		t.Errorf("the lane was told its turn was cut off (%d recover.cut_off)", n)
	}
	var state1 struct {
		State    string          `json:"state"`
		Response json.RawMessage `json:"response"`
	}
	if err := api.Do(ctx, http.MethodGet, "/api/lanes/spool/messages/m-outage", nil, &state1); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(state1.Response), "ECHO: answer during the OUTAGE") {
		t.Errorf("the message after the restart: state %q, response %s; want Codex's answer", state1.State, state1.Response)
	}
	answer := post(t, api, "spool", "and now?")
	for _, notice := range answer.Notices {
		if strings.Contains(notice, "OUTAGE") {
			t.Errorf("the next answer carried a notice about the spooled message: %q", notice)
		}
	}
	if code := d2.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
}

// holdWriteLock takes the SQLite database's write lock from this process
// (as a backup or the sqlite3 shell would) and returns its release.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			t.Error(err)
		}
		conn.Close()
		db.Close()
	}
}
