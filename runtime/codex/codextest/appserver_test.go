package codextest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// rawServer drives a real `codex app-server` over stdio with hand-written
// JSON-RPC, so these tests prove the fake model without the codex client.
type rawServer struct {
	t      *testing.T
	stdin  io.WriteCloser
	msgs   chan rpcMessage
	nextID int
}

type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// startRawServer spawns the real app-server against m in its own process
// group and performs the initialize handshake. The group is killed at cleanup.
func startRawServer(t *testing.T, m *codextest.Model) *rawServer {
	t.Helper()
	cmd := exec.Command(codextest.CodexBinary(t), append([]string{"app-server"}, codextest.Args(m.URL)...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(append(os.Environ(), "CODEX_HOME="+codextest.Home(t)), codextest.Env()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("start codex: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	s := &rawServer{t: t, stdin: stdin, msgs: make(chan rpcMessage, 1024)}
	go s.read(stdout)

	ctx := testContext(t)
	s.call(ctx, "initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "codextest", "title": nil, "version": "0"},
		"capabilities": map[string]any{"experimentalApi": true},
	})
	s.send(map[string]any{"method": "initialized"})
	return s
}

func (s *rawServer) read(stdout io.Reader) {
	defer close(s.msgs)
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var msg rpcMessage
			if jerr := json.Unmarshal(line, &msg); jerr == nil {
				s.msgs <- msg
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *rawServer) send(v any) {
	s.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.stdin.Write(append(data, '\n')); err != nil {
		s.t.Fatalf("write to app-server: %v", err)
	}
}

// next returns the next message, answering server→client requests with an
// error so that no turn stalls on them.
func (s *rawServer) next(ctx context.Context) rpcMessage {
	s.t.Helper()
	for {
		select {
		case msg, ok := <-s.msgs:
			if !ok {
				s.t.Fatal("app-server closed stdout")
			}
			if msg.Method != "" && len(msg.ID) > 0 {
				s.send(map[string]any{"id": msg.ID, "error": map[string]any{"code": -32601, "message": "not supported by the test"}})
				continue
			}
			return msg
		case <-ctx.Done():
			s.t.Fatalf("waiting for app-server: %v", ctx.Err())
		}
	}
}

// call sends a request and returns its result, skipping notifications.
func (s *rawServer) call(ctx context.Context, method string, params any) json.RawMessage {
	s.t.Helper()
	s.nextID++
	id := fmt.Sprint(s.nextID)
	s.send(map[string]any{"id": s.nextID, "method": method, "params": params})
	for {
		msg := s.next(ctx)
		if string(msg.ID) != id || msg.Method != "" {
			continue
		}
		if msg.Error != nil {
			s.t.Fatalf("%s: error %d %s", method, msg.Error.Code, msg.Error.Message)
		}
		return msg.Result
	}
}

func (s *rawServer) startThread(ctx context.Context) string {
	s.t.Helper()
	var res struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(s.call(ctx, "thread/start", map[string]any{}), &res); err != nil || res.Thread.ID == "" {
		s.t.Fatalf("thread/start result: %v", err)
	}
	return res.Thread.ID
}

// turnOutcome is what one turn produced, read from its notifications.
type turnOutcome struct {
	Status     string
	Error      string
	AgentText  string // text of the last completed agentMessage
	Deltas     string // all agentMessage deltas, concatenated
	ItemTypes  []string
	LastTokens int64 // last.totalTokens of the latest tokenUsage update
}

// waitTurn reads notifications until threadID's turn completes.
func (s *rawServer) waitTurn(ctx context.Context, threadID string) turnOutcome {
	s.t.Helper()
	var out turnOutcome
	for {
		msg := s.next(ctx)
		var p struct {
			ThreadID string `json:"threadId"`
			Delta    string `json:"delta"`
			Item     struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
			Turn struct {
				Status string `json:"status"`
				Error  *struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"turn"`
			TokenUsage struct {
				Last struct {
					TotalTokens int64 `json:"totalTokens"`
				} `json:"last"`
			} `json:"tokenUsage"`
		}
		if msg.Method == "" || json.Unmarshal(msg.Params, &p) != nil || p.ThreadID != threadID {
			continue
		}
		switch msg.Method {
		case "item/agentMessage/delta":
			out.Deltas += p.Delta
		case "item/completed":
			out.ItemTypes = append(out.ItemTypes, p.Item.Type)
			if p.Item.Type == "agentMessage" {
				out.AgentText = p.Item.Text
			}
		case "thread/tokenUsage/updated":
			out.LastTokens = p.TokenUsage.Last.TotalTokens
		case "turn/completed":
			out.Status = p.Turn.Status
			if p.Turn.Error != nil {
				out.Error = p.Turn.Error.Message
			}
			return out
		}
	}
}

func (s *rawServer) runTurn(ctx context.Context, threadID, text string) turnOutcome {
	s.t.Helper()
	s.call(ctx, "turn/start", map[string]any{
		"threadId": threadID,
		"input":    []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}},
	})
	return s.waitTurn(ctx, threadID)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// scripted answers by a marker in the prompt; everything else gets the default.
func scripted(req codextest.Request) codextest.Reply {
	text := req.LastUserText()
	switch {
	case req.IsCompaction():
		return codextest.DefaultReply(req)
	case strings.Contains(text, "CASE-TEXT"):
		return codextest.Reply{Text: "scripted reply in chunks", Chunks: 4, ChunkDelay: time.Millisecond,
			Usage: codextest.Usage{InputTokens: 90000, OutputTokens: 500}}
	case strings.Contains(text, "CASE-TOOL"):
		if _, ok := req.ToolOutput(); !ok {
			return codextest.Reply{ToolCall: codextest.ExecCommand("call_case_tool", "echo TOOL-$((6*7))")}
		}
	case strings.Contains(text, "CASE-STREAM-FAIL"):
		return codextest.Reply{StreamFailure: "fake failure"}
	case strings.Contains(text, "CASE-HTTP-400"):
		return codextest.Reply{HTTPStatus: 400}
	}
	return codextest.DefaultReply(req)
}

func TestRealCodexAcceptsFakeModel(t *testing.T) {
	m := codextest.NewModel(t)
	m.Respond(scripted)
	s := startRawServer(t, m)

	tests := []struct {
		name       string
		prompt     string
		wantStatus string
		wantText   string // exact final agent text ("" with a failure)
		wantError  string // substring of the turn error
		wantTokens int64  // last.totalTokens, when checked
		wantReqs   int    // model requests made by the turn
	}{
		{name: "default echo", prompt: "hello there", wantStatus: "completed", wantText: "ECHO: hello there", wantReqs: 1},
		{name: "scripted text with usage", prompt: "CASE-TEXT go", wantStatus: "completed",
			wantText: "scripted reply in chunks", wantTokens: 90500, wantReqs: 1},
		{name: "tool call", prompt: "CASE-TOOL run it", wantStatus: "completed", wantText: "TOOL OUTPUT: ", wantReqs: 2},
		{name: "stream failure", prompt: "CASE-STREAM-FAIL", wantStatus: "failed", wantError: "fake failure", wantReqs: 1},
		{name: "http 400", prompt: "CASE-HTTP-400", wantStatus: "failed", wantError: "fake failure (HTTP 400)", wantReqs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			s.t = t
			before := len(m.Requests())
			thread := s.startThread(ctx)
			got := s.runTurn(ctx, thread, tt.prompt)

			if got.Status != tt.wantStatus {
				t.Fatalf("status = %q (error %q), want %q", got.Status, got.Error, tt.wantStatus)
			}
			if tt.name == "tool call" {
				if !strings.HasPrefix(got.AgentText, tt.wantText) || !strings.Contains(got.AgentText, "TOOL-42") {
					t.Errorf("agent text = %q, want the tool's computed output TOOL-42", got.AgentText)
				}
			} else if got.AgentText != tt.wantText {
				t.Errorf("agent text = %q, want %q", got.AgentText, tt.wantText)
			}
			if tt.wantStatus == "completed" && got.Deltas != got.AgentText {
				t.Errorf("deltas %q do not add up to the agent text %q", got.Deltas, got.AgentText)
			}
			if !strings.Contains(got.Error, tt.wantError) {
				t.Errorf("turn error = %q, want it to contain %q", got.Error, tt.wantError)
			}
			if tt.wantTokens != 0 && got.LastTokens != tt.wantTokens {
				t.Errorf("last total tokens = %d, want %d", got.LastTokens, tt.wantTokens)
			}
			reqs := m.Requests()[before:]
			if len(reqs) != tt.wantReqs {
				t.Fatalf("model requests = %d, want %d", len(reqs), tt.wantReqs)
			}
			for _, r := range reqs {
				if r.ThreadID() != thread {
					t.Errorf("request thread id = %q, want %q", r.ThreadID(), thread)
				}
				if auth := r.Header.Get("Authorization"); auth != "Bearer "+codextest.APIKey {
					t.Errorf("authorization header = %q, want the fake key", auth)
				}
			}
			if !strings.Contains(reqs[0].LastUserText(), tt.prompt) {
				t.Errorf("model's last user text = %q, want it to contain %q", reqs[0].LastUserText(), tt.prompt)
			}
		})
	}
}

func TestRealCodexCompactsWithFakeModel(t *testing.T) {
	m := codextest.NewModel(t)
	s := startRawServer(t, m)
	ctx := testContext(t)

	thread := s.startThread(ctx)
	if got := s.runTurn(ctx, thread, "Remember this secret code: BANANA-42"); got.Status != "completed" {
		t.Fatalf("first turn status = %q (%s)", got.Status, got.Error)
	}
	s.call(ctx, "thread/compact/start", map[string]any{"threadId": thread})
	got := s.waitTurn(ctx, thread)
	if got.Status != "completed" {
		t.Fatalf("compaction turn status = %q (%s)", got.Status, got.Error)
	}
	if !contains(got.ItemTypes, "contextCompaction") {
		t.Errorf("compaction turn items = %v, want a contextCompaction item", got.ItemTypes)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || !reqs[1].IsCompaction() {
		t.Fatalf("want 2 requests, the second a compaction request; got %d", len(reqs))
	}

	if got := s.runTurn(ctx, thread, "what was the code?"); got.Status != "completed" {
		t.Fatalf("turn after compaction status = %q (%s)", got.Status, got.Error)
	}
	after := m.Requests()[2].InputText()
	for _, want := range []string{codextest.CompactionSummary, "BANANA-42"} {
		if !strings.Contains(after, want) {
			t.Errorf("request after compaction lacks %q", want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
