package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/store/storetest"
	"github.com/gatewayd/gatewayd/webconsole"
)

// openTestStore opens a real store with two lanes and one committed turn.
func openTestStore(t *testing.T) *store.Store { return storetest.OpenWithTurn(t) }

// recordingBackend is the store backend that also records resets, like the
// daemon's (which resets through the gateway).
type recordingBackend struct {
	offlineBackend
	resets []string
}

func (b *recordingBackend) Reset(ctx context.Context, key string) error {
	b.resets = append(b.resets, key)
	return b.offlineBackend.Reset(ctx, key)
}

func TestSessionsThroughTheDaemonAPI(t *testing.T) {
	st := openTestStore(t)
	backend := &recordingBackend{offlineBackend: offlineBackend{st}}
	srv := httptest.NewServer(http.StripPrefix("", webconsole.NewAdmin(backend, "tok", webconsole.Workdirs{})))
	defer srv.Close()
	client := &API{Base: srv.URL, Token: "tok", HTTP: srv.Client()}
	ctx := context.Background()

	var out bytes.Buffer
	if err := runSessions(ctx, client, "list", nil, 10, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KEY", "v1:api:default", "v1:telegram:topic:-100:42"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("list lacks %q:\n%s", want, out.String())
		}
	}

	if err := st.SetLaneOption(ctx, "v1:api:default", store.OptionModel, "gpt-x"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runSessions(ctx, client, "show", []string{"v1:api:default"}, 10, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"platform:", "api", "user: remember 42", "assistant: noted: 42", "transcript (2 messages)",
		"model:", "gpt-x", "effort:", "- (default)",
		"tokens today (UTC): 0 in 1 turns (input 0, of which cached 0; output 0, of which reasoning 0)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	before, _ := st.Lane(ctx, "v1:telegram:topic:-100:42")
	if err := runSessions(ctx, client, "reset", []string{"v1:telegram:topic:-100:42"}, 10, &out); err != nil {
		t.Fatal(err)
	}
	if len(backend.resets) != 1 || backend.resets[0] != "v1:telegram:topic:-100:42" {
		t.Errorf("resets = %q: the key did not survive the URL round trip", backend.resets)
	}
	after, _ := st.Lane(ctx, "v1:telegram:topic:-100:42")
	if after.Generation <= before.Generation {
		t.Errorf("generation %d → %d: reset did not reach the store", before.Generation, after.Generation)
	}

	out.Reset()
	if err := runSessions(ctx, client, "search", []string{"noted", "42"}, 10, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.Contains(got, "v1:api:default") || !strings.Contains(got, "assistant  noted: 42") ||
		strings.Contains(got, "remember") {
		t.Errorf("search for both words = %q, want only the assistant's message, with its lane", got)
	}

	err := runSessions(ctx, client, "show", []string{"v1:api:nope"}, 10, &out)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("show of a missing lane: %v, want a 404", err)
	}
	err = runSessions(ctx, client, "show", []string{"v1:nope"}, 10, &out)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "not a lane name") {
		t.Errorf("show of a key that is no lane's: %v, want a 400 saying so", err)
	}
}

func TestSessionsOfflineFallback(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	var out bytes.Buffer
	if err := runSessionsOffline(ctx, offlineBackend{st}, webconsole.Workdirs{}, "reset", []string{"v1:api:default"}, 10, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "reset v1:api:default\n" {
		t.Errorf("output %q", got)
	}
	msgs, err := st.Transcript(ctx, "v1:api:default", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 0 {
		t.Errorf("after reset the current session has %d messages, want a fresh one", len(msgs))
	}
	err = runSessionsOffline(ctx, offlineBackend{st}, webconsole.Workdirs{}, "reset", []string{"v1:api:missing"}, 10, &out)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("reset of a missing lane: %v, want ErrNotFound", err)
	}
}

// Offline search takes its words as plain text: FTS5 syntax in them is
// no error, and nothing found says so.
func TestSessionsSearchOffline(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	tests := []struct {
		words []string
		want  string
	}{
		{words: []string{"remember"}, want: "user  remember 42"},
		{words: []string{`"unbalanced`, "AND", "("}, want: "no messages found"},
		{words: []string{"absent"}, want: "no messages found"},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		if err := runSessionsOffline(ctx, offlineBackend{st}, webconsole.Workdirs{}, "search", tc.words, 10, &out); err != nil {
			t.Fatalf("search %q: %v", tc.words, err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("search %q = %q, want %q", tc.words, out.String(), tc.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("a\n\n  b\tc", 100); got != "a b c" {
		t.Errorf("oneLine folded to %q", got)
	}
	if got := oneLine(strings.Repeat("é", 10), 5); got != "éééé…" {
		t.Errorf("oneLine cut to %q", got)
	}
}

func TestDaemonDownIsDetected(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there any more
	c := &API{Base: base, HTTP: &http.Client{}}
	err := runSessions(context.Background(), c, "list", nil, 10, &bytes.Buffer{})
	if !errors.Is(err, errDaemonDown) {
		t.Errorf("err = %v, want errDaemonDown", err)
	}
}

func TestSessionsCommandFallsBackToTheStore(t *testing.T) {
	dir := processtest.CleanEnv(t)
	stateDir := filepath.Join(dir, "st")
	t.Setenv("GATEWAYD_STATE_DIR", stateDir)
	// A port nothing listens on: bind one and close it.
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Setenv("GATEWAYD_API_LISTEN", strings.TrimPrefix(srv.URL, "http://"))
	srv.Close()

	// No database yet (a state_dir that is not the daemon's): a clear
	// error, and no empty database is created there.
	code, _, errOut := runCLI(t, "", "sessions", "list")
	if code != cli.ExitFailure || !strings.Contains(errOut, "no database at") {
		t.Errorf("sessions list without a database: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "gatewayd.db")); err == nil {
		t.Error("sessions list created a database")
	}

	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(stateDir, "gatewayd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnsureLane(context.Background(), store.LaneKey{SessionKey: "v1:api:x", Platform: "api", Kind: "api", ChatID: "x"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	code, out, errOut := runCLI(t, "", "sessions", "list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "v1:api:x") {
		t.Errorf("list lacks the lane:\n%s", out)
	}
	code, _, errOut = runCLI(t, "", "sessions", "show", "v1:api:none")
	if code != cli.ExitFailure || !strings.Contains(errOut, fmt.Sprint(store.ErrNotFound)) {
		t.Errorf("show missing: exit %d, stderr %q", code, errOut)
	}
}

// `gatewayd sessions reset` with the daemon down drops the messages the
// lane had recorded but not answered, as /reset drops a live lane's queue:
// the next start must not run them in the fresh conversation.
func TestOfflineResetDropsWaitingMessages(t *testing.T) {
	dir := processtest.CleanEnv(t)
	stateDir := filepath.Join(dir, "st")
	t.Setenv("GATEWAYD_STATE_DIR", stateDir)
	srv := httptest.NewServer(http.NotFoundHandler()) // a port nothing listens on
	t.Setenv("GATEWAYD_API_LISTEN", strings.TrimPrefix(srv.URL, "http://"))
	srv.Close()
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := filepath.Join(stateDir, "gatewayd.db")
	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"v1:api:x", "v1:api:y"} {
		if _, err := st.EnsureLane(ctx, store.LaneKey{SessionKey: key, Platform: "api", Kind: "api", ChatID: key[len("v1:api:"):]}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.RecordInbound(ctx, store.Inbound{Platform: "api", MessageID: "m-" + key, SessionKey: key, Text: "queued"}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	if code, out, errOut := runCLI(t, "", "sessions", "reset", "v1:api:x"); code != 0 || out != "reset v1:api:x\n" {
		t.Fatalf("sessions reset: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	st, err = store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pending, err := st.PendingInbound(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].SessionKey != "v1:api:y" {
		t.Errorf("pending after the offline reset = %+v, want only the other lane's message", pending)
	}
}
