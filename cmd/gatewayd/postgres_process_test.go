package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// The daemon on PostgreSQL, as a process: store.driver postgres
// with the DSN from store.dsn_file, the API lane, the real codex app-server
// and the fake model. A message is answered; kill -9; the restarted daemon
// (which first waits out the dead one's ownership lock) resumes the lane's
// thread from the database, and the model's next request carries the
// earlier exchange. No SQLite file is created, and no log line shows the
// DSN's password.
func TestProcessOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	pg := pgtest.Start(t, pgtest.Options{})
	// pgtest trusts loopback logins: the password is carried, not checked,
	// which is enough to see that no log line shows it.
	const password = "pw-in-the-dsn-7Qx"
	u, err := url.Parse(pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(pgtest.Superuser, password)
	dsn := u.String()
	codexBin := codextest.CodexBinary(t)
	model := codextest.NewModel(t)
	bin := buildDaemon(t)
	home := codextest.Home(t)
	dir := t.TempDir()
	dsnFile := filepath.Join(dir, "dsn")
	if err := os.WriteFile(dsnFile, []byte(dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	stateDir := filepath.Join(dir, "state")
	cfgFile := writeProcessConfig(t, dir, map[string]any{
		"state_dir": stateDir,
		"log":       map[string]any{"level": "debug", "format": "json"},
		"store":     map[string]any{"driver": "postgres", "dsn_file": dsnFile},
		"codex": map[string]any{
			"command": codexBin, "args": codextest.Args(model.URL), "home": home,
			"cwd": filepath.Join(dir, "work"), "sandbox": "danger-full-access",
			"start_timeout": "60s",
		},
		"api": map[string]any{"listen": addr, "token": "test-token"},
	})
	notify := listenNotify(t)
	api := &client.API{Base: "http://" + addr, Token: "test-token", HTTP: &http.Client{Timeout: 2 * time.Minute}}

	d1 := startDaemon(t, bin, cfgFile, dir, "run1", notify.path)
	waitHealthy(t, api, d1)
	if opened := logEvents(d1, "store.opened", func(e map[string]any) bool { return e["driver"] == "postgres" }); len(opened) == 0 {
		t.Fatalf("no store.opened event with driver postgres:\n%s", d1.logs())
	}
	if reply := postMessage(t, api, "pg", "remember the number 4217"); !strings.Contains(reply, "4217") {
		t.Fatalf("first reply %q does not echo the message", reply)
	}
	d1.kill9(t)

	d2 := startDaemon(t, bin, cfgFile, dir, "run2", notify.path)
	waitHealthy(t, api, d2)
	n := len(model.Requests())
	if answer := post(t, api, "pg", "what number did I ask you to remember?"); answer.Reply == "" {
		t.Fatal("no reply after the restart")
	}
	var last codextest.Request
	for _, r := range model.Requests()[n:] {
		if strings.Contains(r.LastUserText(), "what number") {
			last = r
		}
	}
	if !strings.Contains(last.InputText(), "remember the number 4217") {
		t.Errorf("the model's request after the restart lacks the earlier context:\n%s", last.InputText())
	}
	if _, err := os.Stat(filepath.Join(stateDir, "gatewayd.db")); !os.IsNotExist(err) {
		t.Errorf("a SQLite database was created beside the PostgreSQL store (stat err %v)", err)
	}
	if code := d2.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
	if strings.Contains(d1.logs()+d2.logs(), password) {
		t.Error("the daemon's logs show the DSN's password")
	}
}

// doctor on store.driver postgres: a reachable server passes with its
// version and the schema to migrate; an unreachable one fails the database
// check with the fix, and neither output shows the DSN's password.
func TestDoctorOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the codex app-server")
	}
	cleanEnv(t)
	t.Setenv(codextest.APIKeyEnv, codextest.APIKey)
	model := codextest.NewModel(t)
	pg := pgtest.Start(t, pgtest.Options{})
	const password = "doctor-pw-31x"
	u, err := url.Parse(pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(pgtest.Superuser, password)

	t.Run("reachable", func(t *testing.T) {
		cfg := doctorConfig(t, t.TempDir(), model, map[string]any{"store": map[string]any{"driver": "postgres", "dsn": u.String()}})
		code, out := runDoctor(t, cfg, password)
		if code != cli.ExitOK {
			t.Fatalf("exit %d, failed %q\n%s", code, failedLines(out), out)
		}
		// The version it migrates to is the store's; InspectPostgres of the
		// empty database says which.
		h, err := store.InspectPostgres(context.Background(), u.String())
		if err != nil || h.WantVersion < 1 {
			t.Fatalf("inspect: %+v, %v", h, err)
		}
		want := fmt.Sprintf("schema version 0; this gatewayd migrates it to %d", h.WantVersion)
		for _, want := range []string{"database: postgres 1", want, "cluster: no node has joined this database yet"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		down := *u
		down.Host = freeAddr(t) // nothing listens there
		cfg := doctorConfig(t, t.TempDir(), model, map[string]any{"store": map[string]any{"driver": "postgres", "dsn": down.String()}})
		code, out := runDoctor(t, cfg, password)
		failed := failedLines(out)
		if code != cli.ExitFailure || len(failed) != 1 || !strings.Contains(failed[0], "database (postgres)") {
			t.Fatalf("exit %d, failed %q, want 1 and only the database\n%s", code, failed, out)
		}
	})
}
