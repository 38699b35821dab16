package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
)

// replay is what the client makes of a recorded session's server side:
// the decoded answers to its requests, the server requests, and each
// turn folded as RunTurn folds it.
type replay struct {
	answers   map[string][]json.RawMessage // by request method, in order
	approvals []ApprovalRequest
	requests  []string           // server request methods
	decisions []Decision         // what the recorded client answered
	turns     []*TurnResult      // in turn/started order
	compacted map[string]bool    // by turn id
	sent      map[string][]entry // client requests by method
}

// replayTranscript feeds testdata/codex/name.jsonl through the client's
// own reader, router and turn collector. Any line the client cannot
// decode fails the test: the recorded shape no longer parses.
func replayTranscript(t *testing.T, name string) *replay {
	t.Helper()
	entries := readTranscript(t, filepath.Join(transcriptDir, name+".jsonl"))
	rp := &replay{answers: map[string][]json.RawMessage{}, compacted: map[string]bool{}, sent: map[string][]entry{}}
	methods := map[string]string{} // client request id → method
	var server bytes.Buffer
	for i, e := range entries {
		var env envelope
		if err := json.Unmarshal(e.Msg, &env); err != nil {
			t.Fatalf("%s line %d: not a JSON-RPC message: %v", name, i+1, err)
		}
		switch e.From {
		case "client":
			if env.Method != "" && len(env.ID) > 0 {
				methods[string(env.ID)] = env.Method
				rp.sent[env.Method] = append(rp.sent[env.Method], e)
			}
			var d struct {
				Result struct{ Decision Decision } `json:"result"`
			}
			if env.Method == "" && json.Unmarshal(e.Msg, &d) == nil && d.Result.Decision != "" {
				rp.decisions = append(rp.decisions, d.Result.Decision)
			}
		case "server":
			server.Write(e.Msg)
			server.WriteByte('\n')
		default:
			t.Fatalf("%s line %d: from %q", name, i+1, e.From)
		}
	}

	c := &Client{log: zap.NewNop(), threads: map[string]*threadState{}}
	cn := newConn(&server, &lockedBuffer{}, zap.NewNop())
	pending := map[int64]chan response{}
	for id := range methods {
		var n int64
		if err := json.Unmarshal([]byte(id), &n); err != nil {
			t.Fatalf("%s: client request id %s is not a number", name, id)
		}
		pending[n] = make(chan response, 1)
		cn.pending[n] = pending[n]
	}
	subs := map[string]*turnSub{}
	for _, id := range threadIDs(server.Bytes()) {
		subs[id] = newTurnSub(cn)
		c.threadFor(id).turn = subs[id]
	}
	var (
		mu      sync.Mutex
		handled = make(chan struct{}, 64)
	)
	cn.onNotify, cn.onEvent = c.route, c.routeEvent
	cn.onRequest = func(_ context.Context, _ *conn, _ json.RawMessage, method string, params json.RawMessage) {
		mu.Lock()
		rp.requests = append(rp.requests, method)
		if kind, ok := approvalKinds[method]; ok {
			rp.approvals = append(rp.approvals, parseApproval(kind, params))
		}
		mu.Unlock()
		handled <- struct{}{}
	}
	want := serverRequestLines(server.Bytes())
	cn.readLoop()
	for range want {
		<-handled
	}

	for id, method := range methods {
		var n int64
		_ = json.Unmarshal([]byte(id), &n)
		select {
		case r := <-pending[n]:
			var out json.RawMessage
			if err := decodeResponse(method, r, &out); err != nil {
				t.Fatalf("%s: answer to %s (id %s): %v", name, method, id, err)
			}
			rp.answers[method] = append(rp.answers[method], out)
		default:
			t.Fatalf("%s: request %s (id %s) was never answered in the recording", name, method, id)
		}
	}
	for _, sub := range subs {
		rp.fold(sub.take())
	}
	return rp
}

// fold runs one thread's notifications through a collector per turn.
func (rp *replay) fold(queue []notification) {
	var col *collector
	for _, n := range queue {
		if n.method == "turn/started" && n.event.Turn != nil {
			res := &TurnResult{ThreadID: n.event.ThreadID, TurnID: n.event.Turn.ID}
			rp.turns = append(rp.turns, res)
			col = &collector{log: zap.NewNop(), res: res, turnID: res.TurnID, seen: map[string]bool{}}
			continue
		}
		if col != nil && col.handle(n) {
			rp.compacted[col.turnID] = col.compacted
			col = nil
		}
	}
}

// threadIDs are the threads the recorded server started or resumed.
func threadIDs(server []byte) []string {
	seen := map[string]bool{}
	var ids []string
	for line := range bytes.Lines(server) {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Thread struct{ ID string } `json:"thread"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) == nil && m.Method == "thread/started" && m.Params.Thread.ID != "" && !seen[m.Params.Thread.ID] {
			seen[m.Params.Thread.ID] = true
			ids = append(ids, m.Params.Thread.ID)
		}
		var r struct {
			Result struct {
				Thread struct{ ID string } `json:"thread"`
			} `json:"result"`
		}
		if json.Unmarshal(line, &r) == nil && r.Result.Thread.ID != "" && !seen[r.Result.Thread.ID] {
			seen[r.Result.Thread.ID] = true
			ids = append(ids, r.Result.Thread.ID)
		}
	}
	return ids
}

func readTranscript(t *testing.T, path string) []entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (re-record with make record)", err)
	}
	var entries []entry
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%s line %d: %v", path, i+1, err)
		}
		entries = append(entries, e)
	}
	return entries
}

// threadOf decodes an answer the way startThread and resume do.
func threadOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var out struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Thread.ID == "" {
		t.Fatalf("thread answer %s: no thread id (%v)", raw, err)
	}
	return out.Thread.ID
}

func TestReplayPlainTurn(t *testing.T) {
	rp := replayTranscript(t, "plain-turn")
	threadOf(t, rp.answers["thread/start"][0])
	if len(rp.turns) != 1 {
		t.Fatalf("%d turns, want 1", len(rp.turns))
	}
	res := rp.turns[0]
	if res.Status != TurnCompleted || res.Text != "ECHO: hello" || res.Usage.TotalTokens == 0 {
		t.Fatalf("turn = status %q text %q usage %+v", res.Status, res.Text, res.Usage)
	}
	if n := len(res.Items); n == 0 || !res.Items[0].IsUserEcho() {
		t.Fatalf("items %+v: want the user echo first", res.Items)
	}
}

func TestReplayToolApproval(t *testing.T) {
	rp := replayTranscript(t, "tool-approval")
	if len(rp.approvals) != 1 {
		t.Fatalf("approval requests %v, want 1", rp.requests)
	}
	q := rp.approvals[0]
	if q.Kind != "command" || q.ItemID != "call_approve" || !strings.Contains(q.Command, "APPROVED-$((6*7))") || q.ThreadID == "" || q.TurnID == "" {
		t.Fatalf("approval request = %+v", q)
	}
	if len(rp.decisions) != 1 || !rp.decisions[0].valid() {
		t.Fatalf("recorded decisions %v, want one valid v2 decision", rp.decisions)
	}
	if len(rp.turns) != 1 || rp.turns[0].Status != TurnCompleted || !strings.Contains(rp.turns[0].Text, "APPROVED-42") {
		t.Fatalf("turns %+v: want one completed with the command's output", rp.turns)
	}
}

func TestReplayCompaction(t *testing.T) {
	rp := replayTranscript(t, "compaction")
	if len(rp.turns) != 2 {
		t.Fatalf("%d turns, want a turn and a compaction", len(rp.turns))
	}
	if len(rp.answers["thread/compact/start"]) != 1 {
		t.Fatalf("answers %v: want one thread/compact/start", rp.answers)
	}
	compaction := rp.turns[1]
	if compaction.Status != TurnCompleted || !rp.compacted[compaction.TurnID] {
		t.Fatalf("compaction turn status %q, contextCompaction seen %v", compaction.Status, rp.compacted[compaction.TurnID])
	}
}

func TestReplayResume(t *testing.T) {
	rp := replayTranscript(t, "resume")
	sent := rp.sent["thread/resume"]
	if len(sent) != 1 || len(rp.answers["thread/resume"]) != 1 {
		t.Fatalf("thread/resume sent %d, answered %d; want 1 each", len(sent), len(rp.answers["thread/resume"]))
	}
	var req struct {
		Params struct{ ThreadID string } `json:"params"`
	}
	if err := json.Unmarshal(sent[0].Msg, &req); err != nil {
		t.Fatal(err)
	}
	if got := threadOf(t, rp.answers["thread/resume"][0]); got != req.Params.ThreadID {
		t.Fatalf("resumed %s, answered %s", req.Params.ThreadID, got)
	}
	if len(rp.turns) != 1 || rp.turns[0].Status != TurnCompleted || rp.turns[0].ThreadID != req.Params.ThreadID {
		t.Fatalf("turns %+v: want one completed on the resumed thread", rp.turns)
	}
}

func TestReplayError(t *testing.T) {
	rp := replayTranscript(t, "error")
	if len(rp.turns) != 1 {
		t.Fatalf("%d turns, want 1", len(rp.turns))
	}
	res := rp.turns[0]
	if res.Status != TurnFailed || res.Error == nil || res.Error.Message == "" || res.Error.Kind == "" {
		t.Fatalf("turn = status %q error %+v, want failed with a message and an error kind", res.Status, res.Error)
	}
}

// recordedServer returns the server lines of every recording: seeds of the
// reader and decoder fuzz targets.
func recordedServer(f *testing.F) [][]byte {
	paths, err := filepath.Glob(filepath.Join(transcriptDir, "*.jsonl"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no recordings in %s (%v)", transcriptDir, err)
	}
	var lines [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for line := range bytes.Lines(b) {
			var e entry
			if json.Unmarshal(line, &e) == nil && e.From == "server" {
				lines = append(lines, []byte(e.Msg))
			}
		}
	}
	return lines
}
