package codex

// TestRecord re-records testdata/codex from the pinned app-server talking to
// the fake model: `make record`, or
//
//	go test ./runtime/codex -run TestRecord -record
//
// Without -record it is skipped; TestReplay checks the recordings.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

var recordFlag = flag.Bool("record", false, "re-record testdata/codex from the pinned codex app-server")

// transcriptDir is the top-level testdata/codex, seen from this package.
const transcriptDir = "../../testdata/codex"

// entry is one line of a transcript: who sent it and the JSON-RPC message.
type entry struct {
	From string          `json:"from"` // "client" or "server"
	Msg  json.RawMessage `json:"msg"`
}

// recorder collects both directions of one client's traffic in the order
// it was written or read.
type recorder struct {
	mu      sync.Mutex
	entries []entry
}

func (r *recorder) add(from string, line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	r.mu.Lock()
	r.entries = append(r.entries, entry{From: from, Msg: json.RawMessage(bytes.Clone(line))})
	r.mu.Unlock()
}

func (r *recorder) tap(stdout io.Reader, stdin io.Writer) (io.Reader, io.Writer) {
	pr, pw := io.Pipe()
	go func() {
		// Lines are recorded as the client reads them: bufio hands them
		// over whole, in order.
		sc := bufio.NewReader(stdout)
		for {
			line, err := sc.ReadBytes('\n')
			r.add("server", line)
			if _, werr := pw.Write(line); werr != nil || err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr, writerFunc(func(b []byte) (int, error) {
		r.add("client", b) // one message per Write (conn.send)
		return stdin.Write(b)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// scenario is one recorded session: it drives c against m.
type scenario struct {
	name string
	run  func(t *testing.T, ctx context.Context, m *codextest.Model, home string, start func(home string, o *Options) *Client)
}

var scenarios = []scenario{
	{"plain-turn", func(t *testing.T, ctx context.Context, _ *codextest.Model, home string, start func(string, *Options) *Client) {
		c := start(home, &Options{})
		th := mustEnsure(t, ctx, c, "")
		mustTurn(t, ctx, c, th, "hello", TurnCompleted)
	}},
	{"tool-approval", func(t *testing.T, ctx context.Context, m *codextest.Model, home string, start func(string, *Options) *Client) {
		m.Respond(func(req codextest.Request) codextest.Reply {
			if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), "run it") {
				return codextest.Reply{ToolCall: codextest.ExecCommand("call_approve", "echo APPROVED-$((6*7))")}
			}
			return codextest.DefaultReply(req)
		})
		c := start(home, &Options{Approvals: func(context.Context, ApprovalRequest) Decision { return DecisionAccept }})
		th, err := c.EnsureThread(ctx, "", ThreadConfig{ApprovalPolicy: "untrusted", Sandbox: "danger-full-access"})
		if err != nil {
			t.Fatal(err)
		}
		mustTurn(t, ctx, c, th.ThreadID, "please run it", TurnCompleted)
	}},
	{"compaction", func(t *testing.T, ctx context.Context, _ *codextest.Model, home string, start func(string, *Options) *Client) {
		c := start(home, &Options{})
		th := mustEnsure(t, ctx, c, "")
		mustTurn(t, ctx, c, th, "remember BANANA-42", TurnCompleted)
		if _, _, err := c.Compact(ctx, th); err != nil {
			t.Fatalf("Compact: %v", err)
		}
	}},
	{"resume", func(t *testing.T, ctx context.Context, _ *codextest.Model, home string, start func(string, *Options) *Client) {
		// The first process is not recorded; the second resumes its thread.
		tap := tapConn
		tapConn = nil
		first := start(home, &Options{})
		th := mustEnsure(t, ctx, first, "")
		mustTurn(t, ctx, first, th, "remember BANANA-42", TurnCompleted)
		if err := first.Close(ctx); err != nil {
			t.Fatal(err)
		}
		tapConn = tap
		c := start(home, &Options{})
		if got := mustEnsure(t, ctx, c, th); got != th {
			t.Fatalf("resumed %s as %s", th, got)
		}
		mustTurn(t, ctx, c, th, "what was the code?", TurnCompleted)
	}},
	{"error", func(t *testing.T, ctx context.Context, m *codextest.Model, home string, start func(string, *Options) *Client) {
		m.Respond(func(req codextest.Request) codextest.Reply {
			if strings.Contains(req.LastUserText(), "FAIL") {
				return codextest.Reply{HTTPStatus: 500}
			}
			return codextest.DefaultReply(req)
		})
		c := start(home, &Options{})
		th := mustEnsure(t, ctx, c, "")
		mustTurn(t, ctx, c, th, "FAIL please", TurnFailed)
	}},
}

func TestRecord(t *testing.T) {
	if !*recordFlag {
		t.Skip("re-record with -record (make record)")
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			m := codextest.NewModel(t)
			home, dir := codextest.Home(t), t.TempDir()
			rec := &recorder{}
			tapConn = rec.tap
			defer func() { tapConn = nil }()
			var clients []*Client
			start := func(home string, o *Options) *Client {
				o.Command, o.Args, o.Env = codextest.CodexBinary(t), codextest.Args(m.URL), codextest.Env()
				o.Home, o.Dir, o.StartTimeout, o.Logger = home, dir, 20*time.Second, zap.NewNop()
				o.ClientName, o.ClientVersion = "gatewayd-record", "0"
				c, err := Start(ctx, *o)
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				clients = append(clients, c)
				return c
			}
			sc.run(t, ctx, m, home, start)
			for _, c := range clients {
				_ = c.Close(ctx)
			}
			writeTranscript(t, sc.name, rec.entries, map[string]string{
				home: "$CODEX_HOME", dir: "$CWD", m.URL: "http://127.0.0.1:0",
			})
		})
	}
}

func mustEnsure(t *testing.T, ctx context.Context, c *Client, stored string) string {
	t.Helper()
	got, err := c.EnsureThread(ctx, stored, ThreadConfig{})
	if err != nil {
		t.Fatalf("EnsureThread(%q): %v", stored, err)
	}
	return got.ThreadID
}

func mustTurn(t *testing.T, ctx context.Context, c *Client, thread, text string, want TurnStatus) {
	t.Helper()
	res, err := c.RunTurn(ctx, thread, TurnInput{Text: text}, TurnEvents{})
	if err != nil || res.Status != want {
		t.Fatalf("RunTurn(%q): %v, status %q (%+v), want %q", text, err, res.Status, res.Error, want)
	}
}

// writeTranscript normalises what differs between runs and machines (temp
// directories, the fake's port, the user's home) and writes name.jsonl.
func writeTranscript(t *testing.T, name string, entries []entry, replace map[string]string) {
	t.Helper()
	if h, err := os.UserHomeDir(); err == nil && h != "/" {
		replace[h] = "$HOME"
	}
	var b bytes.Buffer
	for _, e := range entries {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(normalise(line, replace))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(transcriptDir, name+".jsonl"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// installationID is the recording machine's codex installation.
var installationID = regexp.MustCompile(`"installationId":"[^"]*"`)

// tempPath matches what is left of a temp directory once the known ones
// are replaced (codex's own scratch files).
var tempPath = regexp.MustCompile(`/tmp/[A-Za-z0-9._-]+`)

func normalise(line []byte, replace map[string]string) []byte {
	s := string(line)
	// Longest first, so a directory inside another is replaced whole.
	for {
		longest := ""
		for from := range replace {
			if strings.Contains(s, from) && len(from) > len(longest) {
				longest = from
			}
		}
		if longest == "" {
			break
		}
		s = strings.ReplaceAll(s, longest, replace[longest])
	}
	s = installationID.ReplaceAllString(s, `"installationId":"00000000-0000-0000-0000-000000000000"`)
	return []byte(tempPath.ReplaceAllString(s, "$$TMP"))
}
