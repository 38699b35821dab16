package codextest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	Type string
	Data map[string]any
}

// post sends a Responses request with the given input to the fake model.
func post(t *testing.T, ctx context.Context, m *codextest.Model, input ...any) (*http.Response, error) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"model": "fake-model", "stream": true, "input": input})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL+"/v1/responses", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("session-id", "thread-1")
	return http.DefaultClient.Do(req)
}

func readEvents(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	defer resp.Body.Close()
	var events []sseEvent
	var typ string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data); err != nil {
				t.Fatalf("data line is not JSON: %v", err)
			}
			if data["type"] != typ {
				t.Errorf("data type %v differs from event %q", data["type"], typ)
			}
			events = append(events, sseEvent{Type: typ, Data: data})
		}
	}
	return events
}

func userMsg(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": text}}}
}

func TestModelStreamsTextAsCodexExpects(t *testing.T) {
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		return codextest.Reply{Text: "héllo world", Chunks: 3, Usage: codextest.Usage{InputTokens: 7, OutputTokens: 5}}
	})
	resp, err := post(t, t.Context(), m, userMsg("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type = %q", ct)
	}
	events := readEvents(t, resp)
	var types []string
	var deltas string
	for _, e := range events {
		types = append(types, e.Type)
		if e.Type == "response.output_text.delta" {
			deltas += e.Data["delta"].(string)
		}
	}
	want := []string{"response.created", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.output_item.done", "response.completed"}
	if strings.Join(types, ",") != strings.Join(want, ",") {
		t.Fatalf("events = %v, want %v", types, want)
	}
	if deltas != "héllo world" {
		t.Errorf("deltas joined = %q", deltas)
	}
	usage := events[len(events)-1].Data["response"].(map[string]any)["usage"].(map[string]any)
	if usage["total_tokens"] != float64(12) {
		t.Errorf("total_tokens = %v, want input+output = 12", usage["total_tokens"])
	}
}

func TestModelReplies(t *testing.T) {
	tests := []struct {
		name      string
		reply     codextest.Reply
		wantCode  int
		wantTypes string
	}{
		{name: "http status", reply: codextest.Reply{HTTPStatus: 429}, wantCode: 429},
		{name: "stream failure", reply: codextest.Reply{StreamFailure: "boom"}, wantCode: 200,
			wantTypes: "response.created,response.failed"},
		{name: "tool call", reply: codextest.Reply{ToolCall: codextest.ExecCommand("call_1", "true")}, wantCode: 200,
			wantTypes: "response.created,response.output_item.added,response.function_call_arguments.delta," +
				"response.function_call_arguments.done,response.output_item.done,response.completed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := codextest.NewModel(t)
			m.Respond(func(codextest.Request) codextest.Reply { return tt.reply })
			resp, err := post(t, t.Context(), m, userMsg("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.wantCode)
			}
			var types []string
			for _, e := range readEvents(t, resp) {
				types = append(types, e.Type)
			}
			if got := strings.Join(types, ","); got != tt.wantTypes {
				t.Errorf("events = %s, want %s", got, tt.wantTypes)
			}
		})
	}
}

func TestModelToolCallArgumentsAreAJSONString(t *testing.T) {
	m := codextest.NewModel(t)
	m.Respond(func(codextest.Request) codextest.Reply {
		return codextest.Reply{ToolCall: codextest.ExecCommand("call_7", "echo $((6*7))")}
	})
	resp, err := post(t, t.Context(), m, userMsg("hi"))
	if err != nil {
		t.Fatal(err)
	}
	events := readEvents(t, resp)
	item := events[len(events)-2].Data["item"].(map[string]any)
	var args map[string]any
	if err := json.Unmarshal([]byte(item["arguments"].(string)), &args); err != nil {
		t.Fatalf("arguments %v: %v", item["arguments"], err)
	}
	if item["call_id"] != "call_7" || item["name"] != "exec_command" || args["cmd"] != "echo $((6*7))" {
		t.Errorf("function_call item = %v", item)
	}
}

func TestModelHangIsReleasedByClose(t *testing.T) {
	m := codextest.NewModel(t)
	m.Respond(func(codextest.Request) codextest.Reply { return codextest.Reply{HangBeforeHeaders: true} })
	errc := make(chan error, 1)
	go func() {
		resp, err := post(t, context.Background(), m, userMsg("hi"))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if _, err := m.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Fatalf("hanging request returned before Close: %v", err)
	default:
	}
	m.Close() // must not block on the hanging handler
	<-errc
}

func TestModelHangEndsWithTheRequest(t *testing.T) {
	m := codextest.NewModel(t)
	m.Respond(func(codextest.Request) codextest.Reply { return codextest.Reply{HangBeforeHeaders: true} })
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := post(t, ctx, m, userMsg("hi"))
		errc <- err
	}()
	if _, err := m.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("request error = %v, want context.Canceled", err)
	}
}

func TestWaitRequests(t *testing.T) {
	m := codextest.NewModel(t)
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := m.WaitRequests(short, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitRequests with no request: err = %v, want deadline exceeded", err)
	}

	got := make(chan []codextest.Request, 1)
	go func() {
		reqs, err := m.WaitRequests(t.Context(), 2)
		if err != nil {
			t.Error(err)
		}
		got <- reqs
	}()
	for _, text := range []string{"one", "two"} {
		resp, err := post(t, t.Context(), m, userMsg(text))
		if err != nil {
			t.Fatal(err)
		}
		readEvents(t, resp)
	}
	reqs := <-got
	if len(reqs) != 2 || reqs[0].LastUserText() != "one" || reqs[1].Index != 1 {
		t.Fatalf("requests = %+v", reqs)
	}
	if reqs[0].ThreadID() != "thread-1" {
		t.Errorf("thread id = %q", reqs[0].ThreadID())
	}
}

func TestRequestHelpers(t *testing.T) {
	toolCall := map[string]any{"type": "function_call", "call_id": "c1", "arguments": `{"cmd":"x"}`}
	toolOut := map[string]any{"type": "function_call_output", "call_id": "c1", "output": "OUT-42"}
	assistant := map[string]any{"type": "message", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": "earlier reply"}}}
	tests := []struct {
		name           string
		input          []any
		wantLastUser   string
		wantToolOutput string
		wantCompaction bool
		wantDefault    string
	}{
		{name: "plain", input: []any{userMsg("first"), assistant, userMsg("second")},
			wantLastUser: "second", wantDefault: "ECHO: second"},
		{name: "tool follow-up", input: []any{userMsg("run"), toolCall, toolOut},
			wantLastUser: "run", wantToolOutput: "OUT-42", wantDefault: "TOOL OUTPUT: OUT-42"},
		{name: "tool output before the last user message is history", input: []any{userMsg("run"), toolCall, toolOut, userMsg("next")},
			wantLastUser: "next", wantDefault: "ECHO: next"},
		{name: "compaction", input: []any{userMsg("a"), userMsg("You are performing a CONTEXT CHECKPOINT COMPACTION. Create…")},
			wantLastUser: "You are performing a CONTEXT CHECKPOINT COMPACTION. Create…", wantCompaction: true,
			wantDefault: codextest.CompactionSummary},
		{name: "empty", wantDefault: "ECHO: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := codextest.Request{Body: map[string]any{"input": tt.input}}
			if got := req.LastUserText(); got != tt.wantLastUser {
				t.Errorf("LastUserText = %q, want %q", got, tt.wantLastUser)
			}
			out, ok := req.ToolOutput()
			if out != tt.wantToolOutput || ok != (tt.wantToolOutput != "") {
				t.Errorf("ToolOutput = %q, %v, want %q", out, ok, tt.wantToolOutput)
			}
			if got := req.IsCompaction(); got != tt.wantCompaction {
				t.Errorf("IsCompaction = %v", got)
			}
			if got := codextest.DefaultReply(req).Text; got != tt.wantDefault {
				t.Errorf("DefaultReply text = %q, want %q", got, tt.wantDefault)
			}
		})
	}
	env := func(body string) any { return userMsg("<environment_context>\n" + body + "\n</environment_context>") }
	moved := codextest.Request{Body: map[string]any{"input": []any{
		env("<cwd>/a</cwd>\n<shell>bash</shell>"), userMsg("<cwd>/not-an-environment</cwd>"),
		env("<cwd>/b</cwd>"), env("<filesystem>x</filesystem>"), userMsg("hi")}}}
	for tag, want := range map[string]string{"cwd": "/b", "shell": "bash", "filesystem": "x", "timezone": ""} {
		if got := moved.Environment(tag); got != want {
			t.Errorf("Environment(%q) = %q, want %q", tag, got, want)
		}
	}
	req := codextest.Request{Body: map[string]any{"input": []any{userMsg("a"), assistant, toolOut}}}
	if got, want := req.InputText(), "a\nearlier reply\nOUT-42\n"; got != want {
		t.Errorf("InputText = %q, want %q", got, want)
	}
}

func TestArgsPointCodexAtTheFake(t *testing.T) {
	args := codextest.Args("http://127.0.0.1:1234/")
	joined := strings.Join(args, " ")
	for _, want := range []string{`base_url="http://127.0.0.1:1234/v1"`, `env_key="FAKE_API_KEY"`,
		"request_max_retries=0", "stream_max_retries=0", "model_provider=fake", `model="fake-model"`,
		`approval_policy="never"`, `sandbox_mode="danger-full-access"`, "features.plugins=false"} {
		if !strings.Contains(joined, want) {
			t.Errorf("Args lack %s", want)
		}
	}
	for i := 0; i < len(args); i += 2 {
		if args[i] != "-c" {
			t.Fatalf("args[%d] = %q, want -c pairs", i, args[i])
		}
	}
	if env := codextest.Env(); len(env) != 1 || env[0] != "FAKE_API_KEY="+codextest.APIKey {
		t.Errorf("Env = %v", env)
	}
}

// recordingTB captures how CodexBinary gives up, without ending the real test.
type recordingTB struct {
	testing.TB
	skipped, failed bool
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Skipf(string, ...any) {
	r.skipped = true
	runtime.Goexit()
}
func (r *recordingTB) Fatalf(string, ...any) {
	r.failed = true
	runtime.Goexit()
}

func TestCodexBinaryMissing(t *testing.T) {
	tests := []struct {
		name        string
		ci          string
		wantSkipped bool
		wantFailed  bool
	}{
		{name: "outside CI skips", ci: "", wantSkipped: true},
		{name: "under CI fails", ci: "true", wantFailed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(codextest.BinaryEnv, t.TempDir()+"/no-such-codex")
			t.Setenv("CI", tt.ci)
			rec := &recordingTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				codextest.CodexBinary(rec)
			}()
			<-done
			if rec.skipped != tt.wantSkipped || rec.failed != tt.wantFailed {
				t.Errorf("skipped=%v failed=%v, want %v %v", rec.skipped, rec.failed, tt.wantSkipped, tt.wantFailed)
			}
		})
	}
}

func TestCodexBinaryFromEnv(t *testing.T) {
	bin := codextest.CodexBinary(t) // the vendored binary, or skip
	t.Setenv(codextest.BinaryEnv, bin)
	if got := codextest.CodexBinary(t); got != bin {
		t.Errorf("CodexBinary = %q, want $%s = %q", got, codextest.BinaryEnv, bin)
	}
}

func TestRequestTurnMetadata(t *testing.T) {
	h := http.Header{}
	h.Set("x-codex-turn-metadata", `{"request_kind":"compaction","history_initialization":"cold_resume"}`)
	h.Set("thread-id", "t-9")
	req := codextest.Request{Header: h, Body: map[string]any{"input": []any{userMsg("plain words")}}}
	if !req.IsCompaction() {
		t.Error("request_kind compaction not recognised")
	}
	if got := req.TurnMetadata("history_initialization"); got != "cold_resume" {
		t.Errorf("TurnMetadata = %q", got)
	}
	if got := req.ThreadID(); got != "t-9" {
		t.Errorf("ThreadID from thread-id header = %q", got)
	}
	if got := (codextest.Request{}).TurnMetadata("turn_id"); got != "" {
		t.Errorf("TurnMetadata without the header = %q", got)
	}
}

// LastRequestWith finds the newest request whose last user message has
// the text, and says when none has.
func TestLastRequestWith(t *testing.T) {
	m := codextest.NewModel(t)
	for _, text := range []string{"apple one", "pear", "apple two"} {
		resp, err := post(t, t.Context(), m, userMsg(text))
		if err != nil {
			t.Fatal(err)
		}
		readEvents(t, resp)
	}
	if r, ok := m.LastRequestWith("apple"); !ok || r.LastUserText() != "apple two" {
		t.Errorf("LastRequestWith(apple) = %q, %v; want the newest, apple two", r.LastUserText(), ok)
	}
	if _, ok := m.LastRequestWith("plum"); ok {
		t.Error("LastRequestWith(plum) found a request")
	}
}
