package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
)

func TestPrintStream(t *testing.T) {
	tests := []struct {
		name, stream, want string
	}{
		{"deltas then done",
			"event: delta\ndata: \"Hel\"\n\nevent: delta\ndata: \"lo\"\n\n" +
				"event: done\ndata: {\"reply\":\"Hello\",\"status\":\"completed\"}\n\n",
			"Hello\n"},
		{"done completes a partial stream",
			"event: delta\ndata: \"Hel\"\n\nevent: done\ndata: {\"reply\":\"Hello there\",\"status\":\"completed\"}\n\n",
			"Hello there\n"},
		{"keep-alive comments", "event: delta\ndata: \"a\"\n\n: ping\n\nevent: delta\ndata: \"b\"\n\n", "ab\n"},
		{"only final reply", "event: done\ndata: {\"reply\":\"all at once\",\"status\":\"completed\"}\n\n", "all at once\n"},
		{"command answer", "event: done\ndata: {\"reply\":\"lane reset\",\"status\":\"notice\"}\n\n", "lane reset\n"},
		{"replace", "event: delta\ndata: \"draft\"\n\nevent: replace\ndata: \"final\"\n\n" +
			"event: done\ndata: {\"reply\":\"final\",\"status\":\"completed\"}\n\n", "draft\nfinal\n"},
		{"interrupted", "event: delta\ndata: \"part\"\n\nevent: done\ndata: {\"reply\":\"part\",\"status\":\"interrupted\"}\n\n",
			"part\n[interrupted]\n"},
		{"notice mid-stream", "event: delta\ndata: \"wor\"\n\nevent: notice\ndata: \"queued\"\n\nevent: delta\ndata: \"k\"\n\n",
			"wor\n* queued\nk\n"},
		{"error", "event: error\ndata: \"gatewayd is shutting down\"\n\n", "! gatewayd is shutting down\n"},
		{"progress prints each ended action once, then the summary",
			"event: progress\ndata: {\"actions\":[{\"id\":\"c1\",\"kind\":\"command\",\"title\":\"make test\",\"status\":\"inProgress\"}]}\n\n" +
				"event: progress\ndata: {\"actions\":[{\"id\":\"c1\",\"kind\":\"command\",\"title\":\"make test\",\"status\":\"completed\",\"exit_code\":2}," +
				"{\"id\":\"f1\",\"kind\":\"file_change\",\"title\":\"a.go\",\"status\":\"completed\",\"added\":3,\"removed\":1}]}\n\n" +
				"event: progress\ndata: {\"actions\":[{\"id\":\"c1\",\"kind\":\"command\",\"title\":\"make test\",\"status\":\"completed\",\"exit_code\":2}],\"retry\":\"Reconnecting... 1/5\"}\n\n" +
				"event: delta\ndata: \"fixed\"\n\n" +
				"event: progress\ndata: {\"done\":true,\"summary\":\"1 command, 1 file changed, 3 s\"}\n\n" +
				"event: done\ndata: {\"reply\":\"fixed\",\"status\":\"completed\"}\n\n",
			"· $ make test (exit 2)\n· edited a.go (+3 −1)\n! Reconnecting... 1/5\nfixed\n· 1 command, 1 file changed, 3 s\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printStream(strings.NewReader(tc.stream), &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}

// TestChatConversation drives `chat` against a fake local API: each line is
// posted to the lane with Accept: text/event-stream and the bearer token.
func TestChatConversation(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/api/lanes/work/messages" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Accept") != "text/event-stream" {
			http.Error(w, `{"error":"bad headers"}`, http.StatusUnauthorized)
			return
		}
		var body struct{ Text, User string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		got = append(got, body.User+":"+body.Text)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: delta\ndata: \"echo \"\n\n")
		fmt.Fprintf(w, "event: delta\ndata: %q\n\n", body.Text)
		fmt.Fprintf(w, "event: done\ndata: {\"reply\":%q,\"status\":\"completed\"}\n\n", "echo "+body.Text)
	}))
	defer srv.Close()
	c := &API{Base: srv.URL, Token: "tok", HTTP: srv.Client()}
	var out, errOut bytes.Buffer
	std := cli.Stdio{In: strings.NewReader("hello\n\n/status\n/quit\nnever sent\n"), Out: &out, Err: &errOut}
	if err := Talk(context.Background(), c, "work", "ann", std); err != nil {
		t.Fatal(err)
	}
	if want := []string{"ann:hello", "ann:/status"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("posted %q, want %q", got, want)
	}
	if want := "echo hello\necho /status\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}

func TestChatReportsAPIErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"missing token"}`)
	}))
	defer srv.Close()
	c := &API{Base: srv.URL, HTTP: srv.Client()}
	std := cli.Stdio{In: strings.NewReader("hi\n"), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	err := Talk(context.Background(), c, "default", "u", std)
	if err == nil || !strings.Contains(err.Error(), "missing token (401 Unauthorized)") {
		t.Errorf("err = %v", err)
	}
}
