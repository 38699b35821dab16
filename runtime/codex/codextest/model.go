package codextest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// CompactionMarker is the text codex appends as the last user message when it
// asks the model for a compaction summary (docs/codex-app-server.md §6).
const CompactionMarker = "CONTEXT CHECKPOINT COMPACTION"

// CompactionSummary is the summary the default reply gives to a compaction
// request; codex puts it into the history of later requests.
const CompactionSummary = "FAKE-COMPACTION-SUMMARY"

// Reply scripts the fake model's answer to one request. The zero Reply streams
// an empty assistant message.
type Reply struct {
	Text       string        // assistant text, streamed as output_text deltas
	Chunks     int           // number of deltas Text is split into (<= 1: one delta)
	ChunkDelay time.Duration // pause before each delta (a slow model)
	Usage      Usage         // reported in response.completed; zero → derived from sizes

	// HangBeforeHeaders never answers: the handler blocks until the request
	// is cancelled (codex interrupted or died) or the model is closed.
	HangBeforeHeaders bool
	// HTTPStatus, when not 0 or 200, answers with that status and a JSON error
	// body instead of a stream.
	HTTPStatus int
	// ErrorBody, when set with HTTPStatus, is the JSON body sent instead of
	// the generic one (see UsageLimit).
	ErrorBody string
	// Headers are added to the response (an error or a stream), e.g. the
	// x-codex-primary-* rate-limit headers codex reports as
	// account/rateLimits/updated.
	Headers map[string]string
	// StreamFailure, when set, streams response.created and then
	// response.failed with this message.
	StreamFailure string
	// ToolCall, when set, makes the model call a tool instead of answering
	// with Text (docs/codex-app-server.md §10.2).
	ToolCall *ToolCall
}

// Usage is the token usage reported in response.completed.
type Usage struct {
	InputTokens, CachedInputTokens, OutputTokens, ReasoningTokens, TotalTokens int64
}

// ToolCall is a function_call output item. Name defaults to "exec_command".
type ToolCall struct {
	CallID    string
	Name      string
	Arguments map[string]any // e.g. {"cmd": "echo hi"}; sent as a JSON string
}

// ExecCommand returns a ToolCall that asks codex to run cmd. It asks for a
// non-login shell: sourcing the login profile costs about 0.7 s per command.
func ExecCommand(callID, cmd string) *ToolCall {
	return &ToolCall{CallID: callID, Name: "exec_command", Arguments: map[string]any{"cmd": cmd, "login": false}}
}

// SendFile returns a ToolCall of gatewayd's send_file dynamic tool.
func SendFile(callID, path, caption string) *ToolCall {
	args := map[string]any{"path": path}
	if caption != "" {
		args["caption"] = caption
	}
	return &ToolCall{CallID: callID, Name: "send_file", Arguments: args}
}

// AskedQuestion is one question of a request_user_input call (AskUser).
// Each option label gets the description "about <label>".
type AskedQuestion struct {
	ID, Header, Question string
	Options              []string
	IsOther, IsSecret    bool
}

// AskUser returns a ToolCall of codex's request_user_input tool, which
// Plan mode offers the model: the app-server turns it into an
// item/tool/requestUserInput request to the client.
func AskUser(callID string, qs ...AskedQuestion) *ToolCall {
	questions := make([]any, 0, len(qs))
	for _, q := range qs {
		options := make([]any, 0, len(q.Options))
		for _, label := range q.Options {
			options = append(options, map[string]any{"label": label, "description": "about " + label})
		}
		question := map[string]any{"id": q.ID, "header": q.Header, "question": q.Question, "options": options}
		if q.IsOther {
			question["isOther"] = true
		}
		if q.IsSecret {
			question["isSecret"] = true
		}
		questions = append(questions, question)
	}
	return &ToolCall{CallID: callID, Name: "request_user_input", Arguments: map[string]any{"questions": questions}}
}

// Model is a fake OpenAI Responses API server on 127.0.0.1. It serves
// POST /v1/responses, records every request and answers as scripted by
// Respond (DefaultReply otherwise).
type Model struct {
	URL string // server root, e.g. http://127.0.0.1:PORT; pass it to Args

	t       testing.TB
	srv     *httptest.Server
	closed  chan struct{}
	closing sync.Once

	mu      sync.Mutex
	reqs    []Request
	changed chan struct{} // closed and replaced whenever a request is recorded
	respond func(Request) Reply
	nextID  int
}

// NewModel starts a fake model; it is closed by t.Cleanup.
func NewModel(t testing.TB) *Model {
	t.Helper()
	m := &Model{t: t, closed: make(chan struct{}), changed: make(chan struct{})}
	m.srv = httptest.NewUnstartedServer(http.HandlerFunc(m.serveHTTP))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("codextest: listen: %v", err)
	}
	m.srv.Listener = ln
	m.srv.Start()
	m.URL = m.srv.URL
	t.Cleanup(m.Close)
	return m
}

// Close releases hanging handlers and stops the server. Safe to call twice.
func (m *Model) Close() {
	m.closing.Do(func() {
		close(m.closed)
		m.srv.Close()
	})
}

// Respond sets the function that scripts every following reply; nil restores
// DefaultReply. It may be called at any time, and is called concurrently for
// concurrent requests. A script that does not care about compaction or tool
// follow-ups should delegate those requests to DefaultReply.
func (m *Model) Respond(f func(Request) Reply) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.respond = f
}

// Requests returns a copy of every request recorded so far, in arrival order.
// The requests share their Header and Body with the record: treat them as
// read-only.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// RequestsForThread returns the recorded requests codex made for threadID.
func (m *Model) RequestsForThread(threadID string) []Request {
	var out []Request
	for _, r := range m.Requests() {
		if r.ThreadID() == threadID {
			out = append(out, r)
		}
	}
	return out
}

// LastRequestWith returns the newest recorded request whose last user
// message contains substr.
func (m *Model) LastRequestWith(substr string) (Request, bool) {
	reqs := m.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.Contains(reqs[i].LastUserText(), substr) {
			return reqs[i], true
		}
	}
	return Request{}, false
}

// WaitRequests blocks until at least n requests were recorded or ctx ends,
// and returns all recorded requests.
func (m *Model) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	for {
		m.mu.Lock()
		if len(m.reqs) >= n {
			out := append([]Request(nil), m.reqs...)
			m.mu.Unlock()
			return out, nil
		}
		changed := m.changed
		have := len(m.reqs)
		m.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("codextest: waiting for %d model requests, have %d: %w", n, have, ctx.Err())
		}
	}
}

// Changed returns a channel closed when the next request is recorded: a
// test waiting for a condition on the requests wakes on it (poll.Wait).
func (m *Model) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

func (m *Model) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		m.t.Logf("codextest: fake model: unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil { // codex went away mid-request (killed, interrupted): not a test failure
		m.t.Logf("codextest: fake model: read request body: %v", err)
		return
	}
	req, err := m.record(r, raw)
	if err != nil { // codex sent something this fake cannot read: the fake needs updating
		m.t.Errorf("codextest: fake model: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	reply := m.script()(req)
	m.serveReply(r.Context(), w, req, reply)
}

// record parses and stores one request and wakes WaitRequests.
func (m *Model) record(r *http.Request, raw []byte) (Request, error) {
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		return Request{}, fmt.Errorf("unsupported request Content-Encoding %q", enc)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		return Request{}, fmt.Errorf("request body is not a JSON object: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	req := Request{Index: len(m.reqs), Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Raw: raw}
	m.reqs = append(m.reqs, req)
	close(m.changed)
	m.changed = make(chan struct{})
	return req, nil
}

func (m *Model) script() func(Request) Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.respond == nil {
		return DefaultReply
	}
	return m.respond
}

// newIDs returns fresh, unique response and item ids.
func (m *Model) newIDs() (respID, itemID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	return fmt.Sprintf("resp_fake_%d", m.nextID), fmt.Sprintf("msg_fake_%d", m.nextID)
}

// DefaultReply answers a compaction request with CompactionSummary, a request
// carrying a tool's output with "TOOL OUTPUT: <output>", and anything else
// with "ECHO: <last user text>".
func DefaultReply(req Request) Reply {
	if req.IsCompaction() {
		return Reply{Text: CompactionSummary}
	}
	if out, ok := req.ToolOutput(); ok {
		return Reply{Text: "TOOL OUTPUT: " + out}
	}
	return Reply{Text: "ECHO: " + req.LastUserText()}
}

func (m *Model) serveReply(ctx context.Context, w http.ResponseWriter, req Request, reply Reply) {
	for k, v := range reply.Headers {
		w.Header().Set(k, v)
	}
	switch {
	case reply.HangBeforeHeaders:
		select {
		case <-ctx.Done():
		case <-m.closed:
		}
		return
	case reply.HTTPStatus != 0 && reply.HTTPStatus != http.StatusOK:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.HTTPStatus)
		if reply.ErrorBody != "" {
			_, _ = io.WriteString(w, reply.ErrorBody)
			return
		}
		fmt.Fprintf(w, `{"error":{"message":"fake failure (HTTP %d)","type":"server_error","code":null}}`, reply.HTTPStatus)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "codextest: streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	respID, itemID := m.newIDs()
	s := &stream{w: w, flush: flusher.Flush, ctx: ctx, closed: m.closed, fail: m.t.Errorf}
	s.send("response.created", map[string]any{"response": map[string]any{
		"id": respID, "object": "response", "status": "in_progress", "output": []any{}}})
	switch {
	case reply.StreamFailure != "":
		s.send("response.failed", map[string]any{"response": map[string]any{
			"id": respID, "object": "response", "status": "failed",
			"error": map[string]any{"code": "server_error", "message": reply.StreamFailure}}})
	case reply.ToolCall != nil:
		item := s.toolCall(reply.ToolCall, "fc_"+itemID)
		s.completed(respID, item, reply.usage(req))
	default:
		item := s.message(itemID, reply)
		s.completed(respID, item, reply.usage(req))
	}
}

// usage returns the scripted usage, or one derived from the text sizes (about
// four characters a token) so that it grows with the conversation.
func (r Reply) usage(req Request) Usage {
	u := r.Usage
	if u == (Usage{}) {
		u.InputTokens = int64(len(req.Raw)/4 + 1)
		u.OutputTokens = int64(len(r.Text)/4 + 1)
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	return u
}

// stream writes SSE events; after the client went away or the model closed,
// every further write is skipped.
type stream struct {
	w      io.Writer
	flush  func()
	ctx    context.Context
	closed <-chan struct{}
	fail   func(format string, args ...any)
	dead   bool
}

func (s *stream) send(typ string, payload map[string]any) {
	if s.dead {
		return
	}
	payload["type"] = typ
	data, err := json.Marshal(payload)
	if err != nil {
		s.fail("codextest: fake model: marshal %s: %v", typ, err)
		s.dead = true
		return
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", typ, data)
	if _, err := s.w.Write(buf.Bytes()); err != nil {
		s.dead = true
		return
	}
	s.flush()
}

// pause waits d unless the request or the model ends first.
func (s *stream) pause(d time.Duration) {
	if d <= 0 || s.dead {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-s.ctx.Done():
		s.dead = true
	case <-s.closed:
		s.dead = true
	}
}

func (s *stream) message(itemID string, reply Reply) map[string]any {
	s.send("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
		"type": "message", "id": itemID, "role": "assistant", "status": "in_progress", "content": []any{}}})
	s.send("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	for _, chunk := range splitText(reply.Text, reply.Chunks) {
		s.pause(reply.ChunkDelay)
		s.send("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": chunk})
	}
	s.send("response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "text": reply.Text})
	item := map[string]any{"type": "message", "id": itemID, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}}
	s.send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	return item
}

func (s *stream) toolCall(call *ToolCall, itemID string) map[string]any {
	name := call.Name
	if name == "" {
		name = "exec_command"
	}
	args, err := json.Marshal(call.Arguments)
	if err != nil {
		s.fail("codextest: fake model: marshal tool arguments: %v", err)
		args = []byte("{}")
	}
	item := map[string]any{"type": "function_call", "id": itemID, "call_id": call.CallID, "name": name,
		"arguments": "", "status": "in_progress"}
	s.send("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	s.send("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": 0, "delta": string(args)})
	s.send("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": 0, "arguments": string(args)})
	done := map[string]any{"type": "function_call", "id": itemID, "call_id": call.CallID, "name": name,
		"arguments": string(args), "status": "completed"}
	s.send("response.output_item.done", map[string]any{"output_index": 0, "item": done})
	return done
}

func (s *stream) completed(respID string, item map[string]any, u Usage) {
	s.send("response.completed", map[string]any{"response": map[string]any{
		"id": respID, "object": "response", "status": "completed", "output": []any{item},
		"usage": map[string]any{
			"input_tokens":          u.InputTokens,
			"input_tokens_details":  map[string]any{"cached_tokens": u.CachedInputTokens},
			"output_tokens":         u.OutputTokens,
			"output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
			"total_tokens":          u.TotalTokens,
		}}})
}

// splitText cuts text into n pieces of about equal rune counts.
func splitText(text string, n int) []string {
	runes := []rune(text)
	if n <= 1 || len(runes) <= 1 {
		if text == "" {
			return nil
		}
		return []string{text}
	}
	n = min(n, len(runes))
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, string(runes[i*len(runes)/n:(i+1)*len(runes)/n]))
	}
	return out
}

// Request is one recorded POST /v1/responses.
type Request struct {
	Index  int // arrival order, from 0
	Path   string
	Header http.Header
	Body   map[string]any // the parsed JSON body
	Raw    []byte
}

// InputItem is the text-bearing view of one element of a request's input.
type InputItem struct {
	Type string // "message", "function_call", "function_call_output", …
	Role string // for messages: "developer", "user", "assistant"
	Text string // message content text, function_call arguments, or function_call_output output
}

// ThreadID returns the codex thread id the request belongs to (the
// session-id header, else thread-id).
func (r Request) ThreadID() string {
	if id := r.Header.Get("session-id"); id != "" {
		return id
	}
	return r.Header.Get("thread-id")
}

// TurnMetadata returns one string field of the x-codex-turn-metadata header,
// e.g. "turn_id", "request_kind" or "history_initialization" ("new" after
// thread/start, "cold_resume" after a resume in a fresh process).
func (r Request) TurnMetadata(key string) string {
	var meta map[string]any
	if err := json.Unmarshal([]byte(r.Header.Get("x-codex-turn-metadata")), &meta); err != nil {
		return ""
	}
	return str(meta[key])
}

// Items returns the request's input items in order.
func (r Request) Items() []InputItem {
	raw, _ := r.Body["input"].([]any)
	items := make([]InputItem, 0, len(raw))
	for _, x := range raw {
		obj, _ := x.(map[string]any)
		item := InputItem{Type: str(obj["type"]), Role: str(obj["role"])}
		switch item.Type {
		case "function_call":
			item.Text = str(obj["arguments"])
		case "function_call_output":
			item.Text = outputText(obj["output"])
		default:
			item.Text = contentText(obj["content"])
		}
		items = append(items, item)
	}
	return items
}

// InputText returns the text of every input item, joined by newlines.
func (r Request) InputText() string {
	var b strings.Builder
	for _, it := range r.Items() {
		b.WriteString(it.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// Environment returns what the request's newest environment context says
// for tag ("cwd", "filesystem", …), "" if none says it. codex sends a full
// <environment_context> with the first turn and then only what changed, so
// the newest mention of tag is the one in force (after a turn/start with a
// cwd, that cwd; after a resume, the cwd the thread kept).
func (r Request) Environment(tag string) string {
	open, end := "<"+tag+">", "</"+tag+">"
	items := r.Items()
	for i := len(items) - 1; i >= 0; i-- {
		text := items[i].Text
		if !strings.Contains(text, "<environment_context>") {
			continue
		}
		if j := strings.LastIndex(text, open); j >= 0 {
			value, _, _ := strings.Cut(text[j+len(open):], end)
			return value
		}
	}
	return ""
}

// LastUserText returns the text of the last user message in the input.
func (r Request) LastUserText() string {
	items := r.Items()
	if i := lastUserIndex(items); i >= 0 {
		return items[i].Text
	}
	return ""
}

// LastUserParts returns the content part types of the request's last user
// message ("input_text", "input_image", …): how a test sees that an image
// reached the model as an image.
func (r Request) LastUserParts() []string {
	raw, _ := r.Body["input"].([]any)
	var parts []string
	for _, x := range raw {
		obj, _ := x.(map[string]any)
		if obj["type"] != "message" || obj["role"] != "user" {
			continue
		}
		parts = parts[:0]
		content, _ := obj["content"].([]any)
		for _, c := range content {
			cm, _ := c.(map[string]any)
			parts = append(parts, str(cm["type"]))
		}
	}
	return parts
}

// IsCompaction reports whether codex asks for a compaction summary: the turn
// metadata says request_kind "compaction" (0.169.0 also sends no tools then),
// or the last user message carries the compaction prompt.
func (r Request) IsCompaction() bool {
	return r.TurnMetadata("request_kind") == "compaction" || strings.Contains(r.LastUserText(), CompactionMarker)
}

// ToolOutput returns the output of the last function_call_output that follows
// the last user message: the request is a tool call's follow-up (docs/codex-app-server.md §10.2).
func (r Request) ToolOutput() (string, bool) {
	items := r.Items()
	for i := len(items) - 1; i > lastUserIndex(items); i-- {
		if items[i].Type == "function_call_output" {
			return items[i].Text, true
		}
	}
	return "", false
}

// ToolNames returns the names of the tools the request offers the model.
func (r Request) ToolNames() []string {
	raw, _ := r.Body["tools"].([]any)
	var names []string
	for _, x := range raw {
		obj, _ := x.(map[string]any)
		if name := str(obj["name"]); name != "" {
			names = append(names, name)
		}
	}
	return names
}

func lastUserIndex(items []InputItem) int {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Type == "message" && items[i].Role == "user" {
			return i
		}
	}
	return -1
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// contentText joins the text parts of a message's content (a string or a
// list of {type, text} parts).
func contentText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	parts, _ := v.([]any)
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if obj, ok := p.(map[string]any); ok {
			if t := str(obj["text"]); t != "" {
				texts = append(texts, t)
			}
		}
	}
	return strings.Join(texts, "\n")
}

func outputText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return contentText(v)
}
