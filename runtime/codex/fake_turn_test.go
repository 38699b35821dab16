package codex

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// The fake's turn scripts (see fake_test.go).

func (f *fakeServer) startTurn(id json.RawMessage, tid string, params json.RawMessage) {
	var p struct {
		Input []struct {
			Type         string `json:"type"`
			Text         string `json:"text"`
			TextElements []any  `json:"text_elements"`
		} `json:"input"`
	}
	_ = json.Unmarshal(params, &p)
	f.mu.Lock()
	if !f.loaded[tid] {
		f.mu.Unlock()
		f.fail(id, "thread not found: "+tid)
		return
	}
	if len(p.Input) != 1 || p.Input[0].Type != "text" || p.Input[0].TextElements == nil {
		f.mu.Unlock()
		f.fail(id, "test fake: want one text input with text_elements")
		return
	}
	f.nextTurn++
	t := &fakeTurn{id: fmt.Sprintf("turn-%d", f.nextTurn), interrupt: make(chan struct{}, 1), steer: make(chan string, 1)}
	f.turns[tid] = t
	f.mu.Unlock()
	f.result(id, map[string]any{"turn": map[string]any{"id": t.id, "status": "inProgress", "items": []any{}}})
	go f.script(tid, t, p.Input[0].Text)
}

func (f *fakeServer) script(tid string, t *fakeTurn, text string) {
	f.notify("thread/status/changed", map[string]any{"threadId": tid, "status": map[string]any{"type": "active"}})
	f.notify("turn/started", map[string]any{"threadId": tid, "turn": map[string]any{"id": t.id, "status": "inProgress"}})
	user := map[string]any{"type": "userMessage", "id": t.id + "-user",
		"content": []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}}}
	f.item(tid, t.id, "item/started", user)
	f.item(tid, t.id, "item/completed", user)

	word, rest, _ := strings.Cut(text, " ")
	switch word {
	case "echo":
		var words []string
		for _, w := range strings.Fields(rest) {
			words = append(words, w+" ")
		}
		final := f.say(tid, t.id, words...)
		f.complete(tid, t, "completed", nil, final)
	case "hang", "deaf":
		f.delta(tid, t.id, "msg-1", "partial ")
		<-t.interrupt
		if word == "hang" {
			f.complete(tid, t, "interrupted", nil, "")
		}
	case "die":
		f.delta(tid, t.id, "msg-1", "partial ")
		os.Exit(3)
	case "die-flood":
		// More than a pipe buffer, written just before exiting: what the
		// client has not read yet when the process is reaped must not be lost.
		n, _ := strconv.Atoi(rest)
		chunk := strings.Repeat("x", 1023) + " "
		for range n {
			f.delta(tid, t.id, "msg-1", chunk)
		}
		f.delta(tid, t.id, "msg-1", "end")
		os.Exit(3)
	case "approve-pending":
		// Nobody answers in time; turn/interrupt ends the turn, which
		// withdraws the request (docs/codex-app-server.md §10.4).
		reqID, _ := f.sendRequest("item/commandExecution/requestApproval", map[string]any{
			"threadId": tid, "turnId": t.id, "itemId": "call_1", "command": "touch x", "cwd": "/work"})
		<-t.interrupt
		if rest == "resolved" {
			// Withdrawn on its own; the turn ends only on a second interrupt.
			f.notify("serverRequest/resolved", map[string]any{"threadId": tid, "requestId": reqID})
			<-t.interrupt
		}
		f.complete(tid, t, "interrupted", nil, "")
	case "reroute":
		// What codex sends when the model server answers as another model
		// (and, separately, when its guardian warns), then the answer.
		f.notify("model/rerouted", map[string]any{"threadId": tid, "turnId": t.id, "fromModel": "gpt-asked",
			"toModel": "gpt-other", "reason": "highRiskCyberActivity"})
		f.notify("guardianWarning", map[string]any{"threadId": tid, "message": "Automatic approval review denied the requested action."})
		f.notify("model/rerouted", map[string]any{"threadId": tid, "turnId": "turn-elsewhere", "fromModel": "a", "toModel": "b",
			"reason": "highRiskCyberActivity"})
		final := f.say(tid, t.id, "rerouted answer")
		f.complete(tid, t, "completed", nil, final)
	case "fail":
		f.notify("error", map[string]any{"threadId": tid, "turnId": t.id, "willRetry": true,
			"error": map[string]any{"message": "Reconnecting... 1/5"}})
		e := map[string]any{"message": "We're currently experiencing high demand", "codexErrorInfo": "internalServerError"}
		f.notify("error", map[string]any{"threadId": tid, "turnId": t.id, "willRetry": false, "error": e})
		f.complete(tid, t, "failed", e, "")
	case "approve":
		answer := f.request("item/commandExecution/requestApproval", map[string]any{
			"threadId": tid, "turnId": t.id, "itemId": "call_1", "command": rest, "cwd": "/work", "reason": "needs it"})
		var r struct {
			Decision string `json:"decision"`
		}
		_ = json.Unmarshal(answer.Result, &r)
		final := f.say(tid, t.id, "decision="+r.Decision)
		f.complete(tid, t, "completed", nil, final)
	case "unknown-request":
		answer := f.request("item/tool/call", map[string]any{"threadId": tid, "turnId": t.id})
		text := "result"
		if answer.Error != nil {
			text = "error=" + strconv.Itoa(answer.Error.Code)
		}
		final := f.say(tid, t.id, text)
		f.complete(tid, t, "completed", nil, final)
	case "big":
		// One n-byte delta line, written by hand: json.Marshal of megabytes
		// is slow under the race detector.
		n, _ := strconv.Atoi(rest)
		line := fmt.Appendf(nil, `{"method":"item/agentMessage/delta","params":{"threadId":%q,"turnId":%q,"itemId":"big","delta":"`, tid, t.id)
		line = append(line, strings.Repeat("x", n)...)
		f.sendRaw(append(line, `"}}`...))
		final := f.say(tid, t.id, "big-done")
		f.complete(tid, t, "completed", nil, final)
	case "steerable":
		f.delta(tid, t.id, "msg-1", "discarded ")
		steer := <-t.steer
		f.item(tid, t.id, "item/completed", map[string]any{"type": "userMessage", "id": t.id + "-steer",
			"content": []any{map[string]any{"type": "text", "text": steer}}})
		final := f.say(tid, t.id, "steered: "+steer)
		f.complete(tid, t, "completed", nil, final)
	default:
		final := f.say(tid, t.id, "unscripted")
		f.complete(tid, t, "completed", nil, final)
	}
}

func (f *fakeServer) item(tid, turnID, method string, item map[string]any) {
	f.notify(method, map[string]any{"threadId": tid, "turnId": turnID, "item": item})
}

func (f *fakeServer) delta(tid, turnID, itemID, d string) {
	f.notify("item/agentMessage/delta", map[string]any{"threadId": tid, "turnId": turnID, "itemId": itemID, "delta": d})
}

// say streams one agent message as deltas, yielding between them so that
// concurrent turns interleave on stdout.
func (f *fakeServer) say(tid, turnID string, deltas ...string) string {
	itemID := turnID + "-agent"
	f.item(tid, turnID, "item/started", map[string]any{"type": "agentMessage", "id": itemID, "text": ""})
	for _, d := range deltas {
		f.delta(tid, turnID, itemID, d)
		runtime.Gosched()
	}
	f.item(tid, turnID, "item/completed", map[string]any{"type": "agentMessage", "id": itemID,
		"text": strings.Join(deltas, ""), "phase": nil})
	return strings.Join(deltas, "")
}

func (f *fakeServer) complete(tid string, t *fakeTurn, status string, turnErr map[string]any, last string) {
	f.mu.Lock()
	if f.turns[tid] == t {
		delete(f.turns, tid)
	}
	f.mu.Unlock()
	f.notify("thread/tokenUsage/updated", usageParams(tid, t.id, 1000))
	items := []any{}
	if status == "completed" {
		items = append(items, map[string]any{"type": "agentMessage", "id": t.id + "-agent", "text": last})
	}
	f.notify("thread/status/changed", map[string]any{"threadId": tid, "status": map[string]any{"type": "idle"}})
	var e any
	if turnErr != nil {
		e = turnErr
	}
	f.notify("turn/completed", map[string]any{"threadId": tid, "turn": map[string]any{
		"id": t.id, "status": status, "error": e, "items": items, "durationMs": 5}})
}

func (f *fakeServer) activeTurn(tid string) *fakeTurn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.turns[tid]
}

func (f *fakeServer) interrupt(id json.RawMessage, tid, turnID string) {
	t := f.activeTurn(tid)
	if t == nil || t.id != turnID {
		f.fail(id, "no active turn to interrupt")
		return
	}
	f.result(id, map[string]any{})
	select {
	case t.interrupt <- struct{}{}:
	default:
	}
}

func (f *fakeServer) steer(id json.RawMessage, tid, expected string, params json.RawMessage) {
	t := f.activeTurn(tid)
	if t == nil {
		f.fail(id, "no active turn to steer")
		return
	}
	if t.id != expected {
		f.fail(id, fmt.Sprintf("expected active turn id `%s` but found `%s`", expected, t.id))
		return
	}
	var p struct {
		Input []struct {
			Text string `json:"text"`
		} `json:"input"`
	}
	_ = json.Unmarshal(params, &p)
	f.result(id, map[string]any{"turnId": t.id})
	if len(p.Input) == 1 {
		t.steer <- p.Input[0].Text
	}
}

func (f *fakeServer) compact(id json.RawMessage, tid string) {
	f.mu.Lock()
	if !f.loaded[tid] {
		f.mu.Unlock()
		f.fail(id, "thread not found: "+tid)
		return
	}
	f.nextTurn++
	t := &fakeTurn{id: fmt.Sprintf("turn-%d", f.nextTurn), interrupt: make(chan struct{}, 1)}
	f.turns[tid] = t
	f.mu.Unlock()
	f.result(id, map[string]any{})
	go func() {
		f.notify("turn/started", map[string]any{"threadId": tid, "turn": map[string]any{"id": t.id}})
		item := map[string]any{"type": "contextCompaction", "id": t.id + "-compaction"}
		f.item(tid, t.id, "item/started", item)
		f.notify("thread/tokenUsage/updated", usageParams(tid, t.id, 300))
		f.item(tid, t.id, "item/completed", item)
		f.mu.Lock()
		delete(f.turns, tid)
		f.mu.Unlock()
		f.notify("turn/completed", map[string]any{"threadId": tid, "turn": map[string]any{
			"id": t.id, "status": "completed", "error": nil, "items": []any{}}})
	}()
}

// flood sends count deltas to each listed thread, interleaved, then answers.
func (f *fakeServer) flood(id json.RawMessage, p map[string]any) {
	threads, _ := p["threads"].([]any)
	count, _ := p["count"].(float64)
	for i := 0; i < int(count); i++ {
		for _, t := range threads {
			f.delta(t.(string), "flood", "flood-item", "x")
		}
	}
	f.result(id, map[string]any{})
}
