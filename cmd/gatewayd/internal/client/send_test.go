package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/internal/processtest"
)

// fakeLaneAPI answers POST /api/lanes/{lane}/messages like the API does
// (non-streaming JSON, bearer token "tok") and records what it got.
type fakeLaneAPI struct {
	srv    *httptest.Server
	status int    // HTTP status of the answer
	body   string // the answer
	mu     sync.Mutex
	got    []laneMessage
}

type laneMessage struct {
	Lane, Accept, Text, User, ID string
}

func newFakeLaneAPI(t *testing.T) *fakeLaneAPI {
	f := &fakeLaneAPI{status: http.StatusOK}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/lanes/{lane}/messages", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"missing or wrong bearer token"}`))
			return
		}
		var m laneMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"body must be JSON"}`))
			return
		}
		m.Lane, m.Accept = r.PathValue("lane"), r.Header.Get("Accept")
		f.mu.Lock()
		f.got = append(f.got, m)
		f.mu.Unlock()
		w.WriteHeader(f.status)
		w.Write([]byte(f.body + "\n"))
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeLaneAPI) messages() []laneMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]laneMessage(nil), f.got...)
}

// useFakeLaneAPI points the CLI's config at f with token, via the
// environment as a user's shell would.
func useFakeLaneAPI(t *testing.T, f *fakeLaneAPI, token string) {
	processtest.CleanEnv(t)
	t.Setenv("GATEWAYD_API_LISTEN", strings.TrimPrefix(f.srv.URL, "http://"))
	if token != "" {
		t.Setenv("GATEWAYD_API_TOKEN", token)
	}
}

func TestSendCommand(t *testing.T) {
	const completed = `{"id":"x","reply":"ECHO: hello world","thread_id":"th","turn_id":"tu","status":"completed","notices":["note one"]}`
	tests := []struct {
		name       string
		token      string
		status     int
		body       string
		stdin      string
		args       []string
		wantCode   int
		wantText   string // the text the daemon got ("" when none was sent)
		wantOut    string // stdout, exactly (unless wantJSON)
		wantErr    string // in stderr
		wantNoSent bool
	}{
		{name: "completed", token: "tok", body: completed, args: []string{"send", "web", "hello", "world"},
			wantText: "hello world", wantOut: "ECHO: hello world\n", wantErr: "* note one\n"},
		{name: "stdin text", token: "tok", body: completed, stdin: "line one\nline two\n\n", args: []string{"send", "web"},
			wantText: "line one\nline two\n", wantOut: "ECHO: hello world\n"},
		{name: "text after --", token: "tok", body: completed, args: []string{"send", "web", "--", "-v", "--json"},
			wantText: "-v --json", wantOut: "ECHO: hello world\n"},
		{name: "failed", token: "tok", body: `{"id":"x","reply":"it broke","status":"failed"}`, args: []string{"send", "web", "hi"},
			wantCode: 1, wantText: "hi", wantOut: "it broke\n", wantErr: `gatewayd: the turn did not complete (status "failed")`},
		{name: "timed out", token: "tok", body: `{"id":"x","reply":"","status":"timed_out"}`, args: []string{"send", "web", "hi"},
			wantCode: 1, wantText: "hi", wantErr: `(status "timed_out")`},
		{name: "notice only", token: "tok", body: `{"id":"x","reply":"Lane web: idle","status":"notice"}`, args: []string{"send", "web", "/status"},
			wantCode: 1, wantText: "/status", wantOut: "Lane web: idle\n", wantErr: "no turn ran: the lane answered with a notice"},
		{name: "wrong token", token: "secret-wrong", body: completed, args: []string{"send", "web", "hi"},
			wantCode: 1, wantNoSent: true,
			wantErr: "gatewayd: POST /api/lanes/web/messages: missing or wrong bearer token (401 Unauthorized); set api.token or api.token_file"},
		{name: "shutting down", token: "tok", status: http.StatusServiceUnavailable,
			body: `{"error":"gatewayd is shutting down; try again shortly"}`, args: []string{"send", "web", "hi"},
			wantCode: 1, wantText: "hi", wantErr: "gatewayd is shutting down; try again shortly (503 Service Unavailable)"},
		{name: "not JSON", token: "tok", body: `<html>`, args: []string{"send", "web", "hi"},
			wantCode: 1, wantText: "hi", wantErr: "the daemon's answer is not JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeLaneAPI(t)
			if tc.status != 0 {
				f.status = tc.status
			}
			f.body = tc.body
			useFakeLaneAPI(t, f, tc.token)
			code, out, errOut := runCLI(t, tc.stdin, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, errOut)
			}
			if out != tc.wantOut {
				t.Errorf("stdout %q, want %q", out, tc.wantOut)
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.wantErr)
			}
			if strings.Contains(out+errOut, "secret-wrong") {
				t.Errorf("the token leaked: %q %q", out, errOut)
			}
			got := f.messages()
			if tc.wantNoSent {
				return
			}
			if len(got) != 1 {
				t.Fatalf("the daemon got %d messages, want 1", len(got))
			}
			m := got[0]
			if m.Lane != "web" || m.Text != tc.wantText || m.User != "cli" || !strings.HasPrefix(m.ID, "cli-") ||
				strings.Contains(m.Accept, "text/event-stream") {
				t.Errorf("sent %+v, want lane web, text %q, user cli, an id cli-..., no event stream", m, tc.wantText)
			}
		})
	}
}

// --json prints the daemon's whole answer, indented, and still exits by
// the turn's status.
func TestSendJSON(t *testing.T) {
	const body = `{"id":"x","reply":"done","thread_id":"th","status":"completed","files":[{"name":"a.txt","size":1,"url":"/api/lanes/web/files/f1"}]}`
	f := newFakeLaneAPI(t)
	f.body = body
	useFakeLaneAPI(t, f, "tok")
	code, out, errOut := runCLI(t, "", "send", "--json", "web", "hi")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	var got, want map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	json.Unmarshal([]byte(body), &want)
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("printed %s, want %s", g, w)
	}
	if !strings.Contains(out, "\n  \"reply\": \"done\",\n") || !strings.HasSuffix(out, "}\n") {
		t.Errorf("not indented JSON with a final newline:\n%s", out)
	}

	f.body = `{"id":"x","reply":"","status":"interrupted"}`
	if code, _, errOut := runCLI(t, "", "send", "web", "--json", "hi"); code != 1 || !strings.Contains(errOut, `"interrupted"`) {
		t.Errorf("interrupted with --json: exit %d, stderr %q", code, errOut)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every run sends a new message id, so running it again is a new turn and
// not a replay of the last answer; the token comes from api.token_file too.
func TestSendIDsAreUniqueAndTokenFileWorks(t *testing.T) {
	f := newFakeLaneAPI(t)
	f.body = `{"id":"x","reply":"ok","status":"completed"}`
	useFakeLaneAPI(t, f, "")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GATEWAYD_API_TOKEN_FILE", tokenFile)
	for range 2 {
		if code, _, errOut := runCLI(t, "", "send", "web", "again"); code != 0 {
			t.Fatalf("exit %d; stderr:\n%s", code, errOut)
		}
	}
	got := f.messages()
	if len(got) != 2 || got[0].ID == got[1].ID {
		t.Errorf("message ids %+v: want two different ones", got)
	}
}

func TestSendDaemonDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	processtest.CleanEnv(t)
	t.Setenv("GATEWAYD_API_LISTEN", strings.TrimPrefix(srv.URL, "http://"))
	srv.Close() // nothing listens there any more
	code, out, errOut := runCLI(t, "", "send", "web", "hi")
	if code != 1 || out != "" {
		t.Errorf("exit %d, stdout %q; want 1 and nothing", code, out)
	}
	if want := "gatewayd: daemon not running: nothing listens on " + srv.URL; !strings.Contains(errOut, want) ||
		strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("stderr %q: want one line with %q", errOut, want)
	}
}

// Ctrl-C (the context ending) stops the wait with the message id, by
// which the answer the daemon still records can be found.
func TestSendInterrupted(t *testing.T) {
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices the client leave only once the body is read.
		io.Copy(io.Discard, r.Body)
		close(arrived)
		<-r.Context().Done() // a turn that outlasts the user's patience
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	c := &API{Base: srv.URL, HTTP: srv.Client()}
	var out, errOut bytes.Buffer
	err := send(ctx, c, "web", "hi", false, cli.Stdio{Out: &out, Err: &errOut})
	if err == nil || !strings.Contains(err.Error(), "interrupted before the answer") ||
		!strings.Contains(err.Error(), "GET /api/lanes/web/messages/cli-") {
		t.Errorf("err = %v", err)
	}
	if cli.ExitCode(err) != cli.ExitFailure || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q", cli.ExitCode(err), out.String())
	}
}
