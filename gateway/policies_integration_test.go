package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/compact"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// slowReply streams "first" slowly so a second message arrives mid-turn.
func slowFirst(req codextest.Request) codextest.Reply {
	if strings.Contains(req.LastUserText(), "tell me a long story") {
		return codextest.Reply{Text: strings.Repeat("once upon a time ", 40), Chunks: 40, ChunkDelay: 50 * time.Millisecond}
	}
	return codextest.DefaultReply(req)
}

// askWhileStreaming sends "tell me a long story", waits until its reply
// streams, then sends second; it returns both answers.
func askWhileStreaming(t *testing.T, w *world, gw *instance, second string) (first, next api.Response) {
	t.Helper()
	w.model.Respond(slowFirst)
	defer w.model.Respond(nil)
	done := make(chan api.Response, 1)
	streaming := make(chan struct{})
	go func() { done <- gw.streamUntilDone(t, "alpha", "tell me a long story", streaming) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-streaming: // the first delta arrived: the turn runs and streams
	case <-ctx.Done():
		t.Fatal("the first turn never streamed")
	}
	next = gw.ask(t, "alpha", second)
	select {
	case first = <-done:
	case <-ctx.Done():
		t.Fatal("the first turn was never answered")
	}
	return first, next
}

func TestIntegrationBusySteer(t *testing.T) {
	w := newWorld(t)
	gw := w.start(t, gateway.Config{BusyMode: gateway.BusySteer})
	first, steered := askWhileStreaming(t, w, gw, "STEERED-XYZ")
	if steered.Reply != "Added to the reply in progress." {
		t.Errorf("steered message answered %+v", steered)
	}
	if first.Status != "completed" || first.Reply != "ECHO: STEERED-XYZ" {
		t.Errorf("steered turn answered %+v, want the model's answer to the steer", first)
	}
	reqs := w.model.RequestsForThread(first.ThreadID)
	if last := reqs[len(reqs)-1]; last.TurnMetadata("turn_id") != reqs[len(reqs)-2].TurnMetadata("turn_id") {
		t.Errorf("the steer started a new turn; want it in the running one")
	}
	msgs, err := gw.st.Transcript(context.Background(), "v1:api:alpha", 100)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, m := range msgs {
		rows = append(rows, m.Role+":"+m.Text)
	}
	// The steer's notice was told while the turn ran; it is kept after the
	// turn's messages, before the answer it came ahead of.
	want := []string{"user:tell me a long story", "user:STEERED-XYZ", "notice:Added to the reply in progress.",
		"assistant:ECHO: STEERED-XYZ"}
	if strings.Join(rows, "|") != strings.Join(want, "|") {
		t.Errorf("transcript %q, want both user messages once, the notice, and one answer", rows)
	}
	// The turn is over: the next message is a turn of its own.
	if r := gw.ask(t, "alpha", "after"); r.Reply != "ECHO: after" || r.ThreadID != first.ThreadID {
		t.Errorf("next turn %+v", r)
	}
}

func TestIntegrationBusyInterrupt(t *testing.T) {
	w := newWorld(t)
	gw := w.start(t, gateway.Config{BusyMode: gateway.BusyInterrupt})
	first, next := askWhileStreaming(t, w, gw, "never mind, say hi")
	if first.Status != "interrupted" || !strings.HasSuffix(first.Reply, "(interrupted)") || !strings.Contains(first.Reply, "once upon") {
		t.Errorf("interrupted turn answered %+v, want its partial text marked interrupted", first)
	}
	if next.Status != "completed" || next.Reply != "ECHO: never mind, say hi" || next.ThreadID != first.ThreadID {
		t.Errorf("new message answered %+v", next)
	}
}

// streamUntilDone streams text, closes streaming at the first delta (or
// when the stream ends without one) and returns the done event.
func (in *instance) streamUntilDone(t *testing.T, lane, text string, streaming chan struct{}) api.Response {
	signalled := false
	signal := func() {
		if !signalled {
			signalled = true
			close(streaming)
		}
	}
	defer signal()
	done, err := in.stream(lane, text, func(event, _ string) {
		if event == "delta" {
			signal()
		}
	})
	if err != nil {
		t.Error(err) // called from a goroutine: no Fatal
	}
	return done
}

// bigUsage makes the model report a context of 85% of the 100k window set
// by contextWindowArgs for "BIG" prompts; compaction fails with HTTP 500
// when failCompaction is set.
func bigUsage(failCompaction bool) func(codextest.Request) codextest.Reply {
	return func(req codextest.Request) codextest.Reply {
		if req.IsCompaction() && failCompaction {
			return codextest.Reply{HTTPStatus: 500}
		}
		r := codextest.DefaultReply(req)
		if !req.IsCompaction() && strings.Contains(req.LastUserText(), "BIG") {
			r.Usage = codextest.Usage{InputTokens: 85000, OutputTokens: 10}
		}
		return r
	}
}

var contextWindowArgs = []string{"-c", "model_context_window=100000"}

func compactionRequests(w *world, thread string) int {
	n := 0
	for _, r := range w.model.RequestsForThread(thread) {
		if r.IsCompaction() {
			n++
		}
	}
	return n
}

func TestIntegrationCompactionAboveThreshold(t *testing.T) {
	w := newWorld(t)
	w.args = contextWindowArgs
	w.features.Compact = compact.Config{At: 0.8}
	cfg := gateway.Config{}
	gw := w.start(t, cfg)
	w.model.Respond(bigUsage(false))
	big := gw.ask(t, "alpha", "Remember MANGO-9. BIG context now.")
	thread := big.ThreadID
	u, ok := gw.cx.Usage(thread)
	// codex reports the usable window (95% of model_context_window).
	if !ok || u.ContextWindow <= 0 || float64(u.LastTotalTokens) < 0.8*float64(u.ContextWindow) {
		t.Fatalf("usage after the big turn %+v (reported %v), want >= 80%% of the window", u, ok)
	}
	next := gw.ask(t, "alpha", "What was the code?")
	if next.Reply != "ECHO: What was the code?" || next.ThreadID != thread {
		t.Fatalf("turn after crossing the threshold %+v", next)
	}
	if n := compactionRequests(w, thread); n != 1 {
		t.Fatalf("compaction requests %d, want exactly 1", n)
	}
	if len(next.Notices) != 1 || !strings.Contains(next.Notices[0], "Compacted this conversation's context") {
		t.Errorf("notices %q, want one compaction notice", next.Notices)
	}
	if got := w.lastRequestFor(t, thread); !strings.Contains(got, codextest.CompactionSummary) {
		t.Errorf("the turn after compaction does not carry the summary:\n%s", got)
	}
	lane, err := gw.st.Lane(context.Background(), "v1:api:alpha")
	if err != nil || lane.Meta["compaction.last_at"] == "" || lane.ThreadID != thread {
		t.Errorf("lane after compaction %+v (%v), want the compaction recorded and the thread kept", lane, err)
	}
	if again := gw.ask(t, "alpha", "and again"); again.Reply != "ECHO: and again" || compactionRequests(w, thread) != 1 {
		t.Errorf("third turn %+v, compactions %d; want no second compaction", again, compactionRequests(w, thread))
	}
	status := gw.ask(t, "alpha", "/status")
	if !strings.Contains(status.Reply, fmt.Sprintf("/ %d tokens", u.ContextWindow)) || !strings.Contains(status.Reply, "Compaction: automatic above 80% of the window; last") {
		t.Errorf("/status:\n%s", status.Reply)
	}

	// The compacted thread resumes after a restart: new client, same home.
	gw.stop()
	w.model.Respond(nil)
	gw = w.start(t, cfg)
	r := gw.ask(t, "alpha", "After the restart?")
	if r.ThreadID != thread || r.Reply != "ECHO: After the restart?" || len(r.Notices) != 0 {
		t.Fatalf("after restart %+v, want thread %s resumed", r, thread)
	}
	if _, outcomes := gw.cx.snapshot(); len(outcomes) != 1 || outcomes[0] != "resumed:"+thread {
		t.Errorf("ensure outcomes %v, want one resume", outcomes)
	}
	if got := w.lastRequestFor(t, thread); !strings.Contains(got, codextest.CompactionSummary) || !strings.Contains(got, "MANGO-9") {
		t.Errorf("resumed request lacks the compacted history:\n%s", got)
	}
}

func TestIntegrationFailedCompactionKeepsLaneWorking(t *testing.T) {
	w := newWorld(t)
	w.args = contextWindowArgs
	w.features.Compact = compact.Config{At: 0.8}
	gw := w.start(t, gateway.Config{})
	w.model.Respond(bigUsage(true))
	big := gw.ask(t, "alpha", "Remember KIWI-3. BIG context now.")
	next := gw.ask(t, "alpha", "Still there?")
	if next.Status != "completed" || next.Reply != "ECHO: Still there?" || next.ThreadID != big.ThreadID {
		t.Fatalf("turn after a failed compaction %+v, want an answer on thread %s", next, big.ThreadID)
	}
	if compactionRequests(w, big.ThreadID) != 1 {
		t.Errorf("compaction requests %d, want 1 (attempted once)", compactionRequests(w, big.ThreadID))
	}
	if len(next.Notices) != 1 || !strings.Contains(next.Notices[0], "Could not compact") {
		t.Errorf("notices %q", next.Notices)
	}
	if released, _ := gw.cx.snapshot(); len(released) != 0 {
		t.Errorf("released %v: a failed compaction must not drop the thread", released)
	}
	if got := w.lastRequestFor(t, big.ThreadID); !strings.Contains(got, "KIWI-3") {
		t.Errorf("the thread lost its context after the failed compaction:\n%s", got)
	}
	if r := gw.ask(t, "alpha", "/compact"); !strings.Contains(r.Reply, "Compaction failed") {
		t.Errorf("/compact answered %q", r.Reply)
	}
	if r := gw.ask(t, "alpha", "one more"); r.Reply != "ECHO: one more" || r.ThreadID != big.ThreadID {
		t.Errorf("after a failed /compact %+v", r)
	}
}

// waitPending polls until the lane has n pending approvals (the request
// reaches the gateway from codex's stdout; there is no other signal).
func waitPending(t *testing.T, gw *instance, key string, n int) []gateway.PendingApproval {
	t.Helper()
	var p []gateway.PendingApproval
	if !poll.Wait(30*time.Second, nil, func() bool {
		p = gw.g.PendingApprovals(key)
		return len(p) == n
	}) {
		t.Fatalf("pending approvals %+v, want %d", p, n)
	}
	return p
}

func TestIntegrationChatApprovals(t *testing.T) {
	w := newWorld(t)
	cfg := gateway.Config{Approvals: gateway.ApprovalsChat, ApprovalTimeout: 3 * time.Second}
	cfg.Thread.ApprovalPolicy = "untrusted"
	gw := w.start(t, cfg)
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		if _, ok := req.ToolOutput(); !ok {
			for _, c := range []string{"accept", "again", "decline", "timeout"} {
				if strings.Contains(req.LastUserText(), "CASE-"+c) {
					return codextest.Reply{ToolCall: codextest.ExecCommand("call_"+c,
						"touch "+c+"_marker && echo APPROVED-OUTPUT-$((6*7))")}
				}
			}
		}
		return codextest.DefaultReply(req)
	})
	const key = "v1:api:alpha"
	ask := func(text string) chan api.Response {
		ch := make(chan api.Response, 1)
		go func() {
			res, err := gw.tryAsk("alpha", text)
			if err != nil {
				t.Error(err)
			}
			ch <- res
		}()
		return ch
	}

	// accept, through the API lane's approvals route: the streaming request
	// shows the approval event; a decision posted for another lane is
	// refused (403) and leaves it pending; the lane's own decision runs it.
	res, seen := gw.streamApproving(t, "alpha", "CASE-accept please run the command", func(a api.Approval) {
		if a.Kind != "command" || !strings.Contains(a.Command, "accept_marker") || a.ThreadID == "" {
			t.Errorf("approval event %+v", a)
		}
		if code, body := gw.decideHTTP(t, "beta", a.ID, `{"decision":"accept","user":"mallory"}`); code != http.StatusForbidden {
			t.Errorf("decision from another lane: %d %v, want 403", code, body)
		}
		if p := gw.g.PendingApprovals(key); len(p) != 1 || p[0].ID != a.ID {
			t.Errorf("pending after the refused decision %+v, want %s still pending", p, a.ID)
		}
		if code, body := gw.decideHTTP(t, "alpha", a.ID, `{"decision":"accept","user":"tester"}`); code != http.StatusOK {
			t.Errorf("accept: %d %v", code, body)
		}
		if code, _ := gw.decideHTTP(t, "alpha", a.ID, `{"decision":"decline"}`); code != http.StatusNotFound {
			t.Errorf("second decision: %d, want 404 (answered once)", code)
		}
	})
	if seen != 1 {
		t.Errorf("approval events %d, want 1", seen)
	}
	if res.Status != "completed" || !strings.Contains(res.Reply, "APPROVED-OUTPUT-42") || len(res.Approvals) != 1 {
		t.Errorf("approved turn %+v, want the command's output to reach the model", res)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "accept_marker")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	asked := false
	for _, n := range res.Notices {
		asked = asked || strings.Contains(n, "Codex asks to run a command")
	}
	if !asked {
		t.Errorf("notices %q lack the question", res.Notices)
	}

	// The text commands decide too; a foreign /approve is refused.
	answer := ask("CASE-again please run the command")
	p := waitPending(t, gw, key, 1)
	if r := gw.ask(t, "beta", "/approve "+p[0].ID); !strings.Contains(r.Reply, "belongs to another conversation") {
		t.Errorf("foreign /approve answered %q", r.Reply)
	}
	if r := gw.ask(t, "alpha", "/approve"); r.Reply != "Approval "+p[0].ID+": approved once." {
		t.Errorf("/approve answered %q", r.Reply)
	}
	if res = <-answer; res.Status != "completed" || !strings.Contains(res.Reply, "APPROVED-OUTPUT-42") {
		t.Errorf("approved turn %+v", res)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "again_marker")); err != nil {
		t.Errorf("the command approved by /approve did not run: %v", err)
	}

	// decline: the command does not run, the model is told.
	answer = ask("CASE-decline please run the command")
	waitPending(t, gw, key, 1)
	if r := gw.ask(t, "alpha", "/deny"); !strings.Contains(r.Reply, "declined") {
		t.Errorf("/deny answered %q", r.Reply)
	}
	res = <-answer
	if res.Status != "completed" || !strings.Contains(res.Reply, "rejected") || strings.Contains(res.Reply, "APPROVED-OUTPUT-42") {
		t.Errorf("declined turn %+v, want the model told of the rejection", res)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "decline_marker")); err == nil {
		t.Error("the declined command ran")
	}

	// timeout: nobody answers; declined after ApprovalTimeout, lane told.
	res = <-ask("CASE-timeout please run the command")
	if res.Status != "completed" || !strings.Contains(res.Reply, "rejected") {
		t.Errorf("timed-out turn %+v, want declined", res)
	}
	told := false
	for _, n := range res.Notices {
		told = told || strings.Contains(n, "No answer to approval")
	}
	if !told {
		t.Errorf("notices %q lack the timeout notice", res.Notices)
	}
}

// streamApproving streams text, calls decide for every "approval" event
// and returns the done event and how many approval events came.
func (in *instance) streamApproving(t *testing.T, lane, text string, decide func(api.Approval)) (api.Response, int) {
	t.Helper()
	approvals := 0
	var bad error
	done, err := in.stream(lane, text, func(event, data string) {
		if event != "approval" || bad != nil {
			return
		}
		approvals++
		var a api.Approval
		if bad = json.Unmarshal([]byte(data), &a); bad == nil {
			decide(a)
		}
	})
	if err != nil || bad != nil {
		t.Fatalf("stream %q: %v %v", text, err, bad)
	}
	return done, approvals
}

// decideHTTP posts a decision to the API lane's approvals route.
func (in *instance) decideHTTP(t *testing.T, lane, id, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post("http://"+in.api.Addr()+"/api/lanes/"+lane+"/approvals/"+id, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("decide %s: %v", id, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decide %s: answer is not JSON: %v", id, err)
	}
	return resp.StatusCode, out
}

// A file change codex asks to approve names no path; its question and the
// API's approval event show the paths from the change's own item, and the
// change is made once accepted.
func TestIntegrationFileChangeApprovalShowsItsPaths(t *testing.T) {
	w := newWorld(t)
	cfg := gateway.Config{Approvals: gateway.ApprovalsChat, ApprovalTimeout: 30 * time.Second}
	cfg.Thread.ApprovalPolicy = "untrusted"
	gw := w.start(t, cfg)
	patch := "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: hello.txt\n+hello from patch\n*** End Patch\nEOF\n"
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		if _, ok := req.ToolOutput(); !ok && strings.Contains(req.LastUserText(), "CASE-patch") {
			return codextest.Reply{ToolCall: codextest.ExecCommand("call_patch", patch)}
		}
		return codextest.DefaultReply(req)
	})
	want := filepath.Join(w.dir, "hello.txt") + " (add)"
	res, seen := gw.streamApproving(t, "alpha", "CASE-patch add a file", func(a api.Approval) {
		if a.Kind != "fileChange" || len(a.Files) != 1 || a.Files[0] != want || a.Escalation != "" {
			t.Errorf("approval event %+v, want the file change naming %s", a, want)
		}
		if code, body := gw.decideHTTP(t, "alpha", a.ID, `{"decision":"accept"}`); code != http.StatusOK {
			t.Errorf("accept: %d %v", code, body)
		}
	})
	if seen != 1 || res.Status != "completed" {
		t.Fatalf("%d approval events, answer %+v", seen, res)
	}
	shown := false
	for _, n := range res.Notices {
		shown = shown || strings.Contains(n, "```\nfile:    "+want)
	}
	if !shown {
		t.Errorf("notices %q lack the path in the question's code block", res.Notices)
	}
	if b, err := os.ReadFile(filepath.Join(w.dir, "hello.txt")); err != nil || string(b) != "hello from patch\n" {
		t.Errorf("the accepted change wrote %q, %v", b, err)
	}
}
