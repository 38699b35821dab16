package main

import (
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// daemonSetup is what a process test runs the built daemon with: the real
// codex against a fake model, a state directory, a free loopback address
// for the API, the config written there and a client for the API.
type daemonSetup struct {
	model   *codextest.Model
	bin     string // the built daemon
	dir     string // its state and work directories, and its config
	addr    string // api.listen
	cfgFile string
	api     *client.API
}

// newDaemonSetup skips under -short; otherwise it starts the fake model,
// builds the daemon and picks the directory and address. configure writes
// the config.
func newDaemonSetup(t *testing.T) *daemonSetup {
	t.Helper()
	processtest.SkipWhenShort(t, "builds and runs the daemon")
	return &daemonSetup{model: codextest.NewModel(t), bin: buildDaemon(t), dir: t.TempDir(), addr: freeAddr(t)}
}

// configure writes processConfig's config with extra over it (extra's api
// section merged over api.listen) and makes the API client, which carries
// api.token when extra sets one.
func (s *daemonSetup) configure(t *testing.T, extra map[string]any) *daemonSetup {
	t.Helper()
	api := map[string]any{"listen": s.addr}
	if section, ok := extra["api"].(map[string]any); ok {
		maps.Copy(api, section)
	}
	cfg := maps.Clone(extra)
	if cfg == nil {
		cfg = map[string]any{}
	}
	cfg["api"] = api
	s.cfgFile = processConfig(t, s.dir, s.addr, s.model, cfg)
	token, _ := api["token"].(string)
	s.api = &client.API{Base: "http://" + s.addr, Token: token, HTTP: &http.Client{Timeout: 2 * time.Minute}}
	return s
}

// start starts the daemon as name and waits until it is healthy.
func (s *daemonSetup) start(t *testing.T, name string) *daemonProc {
	t.Helper()
	d := startDaemon(t, s.bin, s.cfgFile, s.dir, name, listenNotify(t).path)
	waitHealthy(t, s.api, d)
	return d
}
