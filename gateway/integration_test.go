package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/features"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// The real client and store satisfy the gateway's interfaces.
var (
	_ gateway.Codex = (*codex.Client)(nil)
	_ gateway.Store = (*store.Store)(nil)
)

// recordingCodex is the real client, recording releases and ensure outcomes.
type recordingCodex struct {
	*codex.Client
	mu       sync.Mutex
	released []string
	outcomes []string // "<outcome>:<thread>"
}

func (r *recordingCodex) Release(ctx context.Context, threadID string) error {
	r.mu.Lock()
	r.released = append(r.released, threadID)
	r.mu.Unlock()
	return r.Client.Release(ctx, threadID)
}

func (r *recordingCodex) EnsureThread(ctx context.Context, stored string, cfg codex.ThreadConfig) (codex.Ensured, error) {
	en, err := r.Client.EnsureThread(ctx, stored, cfg)
	r.mu.Lock()
	r.outcomes = append(r.outcomes, en.Outcome.String()+":"+en.ThreadID)
	r.mu.Unlock()
	return en, err
}

func (r *recordingCodex) snapshot() (released, outcomes []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.released...), append([]string(nil), r.outcomes...)
}

// world is what survives a gateway restart: the codex binary, its home (the
// rollouts), the fake model and the database file.
type world struct {
	bin   string
	model *codextest.Model
	home  string
	db    string
	dir   string
	args  []string // extra app-server arguments
	// turnTimeout is the client's turn watchdog (0: its default).
	turnTimeout time.Duration
	// storeAs, when set, is the store as the gateway sees it (a test
	// hides one of its methods).
	storeAs func(*store.Store) gateway.Store
	// features configures the feature packages (default: as the daemon's
	// defaults).
	features features.Settings
}

func newWorld(t testing.TB) *world {
	t.Helper()
	dir := t.TempDir()
	return &world{bin: codextest.CodexBinary(t), model: codextest.NewModel(t), home: codextest.Home(t),
		db: filepath.Join(dir, "gatewayd.db"), dir: dir}
}

// instance is one running gateway process (in-process): codex client,
// store, API platform and gateway.
type instance struct {
	cx   *recordingCodex
	g    *gateway.Gateway
	api  *api.Platform
	st   *store.Store
	logs *observer.ObservedLogs // what the instance logged, for events with no other signal
	stop func()
}

func (w *world) start(t testing.TB, cfg gateway.Config) *instance {
	t.Helper()
	ctx := context.Background()
	core, logs := observer.New(zapcore.DebugLevel)
	log := zaptest.NewLogger(t, zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, core)
	})))
	// The client starts before the gateway: approvals are routed late,
	// as the daemon does.
	var late atomic.Pointer[gateway.Gateway]
	approve := func(ctx context.Context, req codex.ApprovalRequest) codex.Decision {
		if g := late.Load(); g != nil {
			return g.Approve(ctx, req)
		}
		return codex.DecisionDecline
	}
	tool := func(ctx context.Context, call codex.ToolCall) codex.ToolResult {
		if g := late.Load(); g != nil {
			return g.ToolCall(ctx, call)
		}
		return codex.ToolResult{Text: "not ready"}
	}
	cx, err := codex.Start(ctx, codex.Options{Command: w.bin, Args: append(codextest.Args(w.model.URL), w.args...), Home: w.home,
		Env: codextest.Env(), Dir: w.dir, Logger: log, Approvals: approve, ToolCall: tool, TurnTimeout: w.turnTimeout})
	if err != nil {
		t.Fatalf("codex.Start: %v", err)
	}
	st, err := store.Open(ctx, w.db, store.Options{Logger: log})
	if err != nil {
		cx.Close(ctx)
		t.Fatalf("store.Open: %v", err)
	}
	cfg.Logger = log
	cfg.Thread.Cwd = w.dir
	cfg.TurnTimeout = w.turnTimeout
	rec := &recordingCodex{Client: cx}
	var gst gateway.Store = st
	if w.storeAs != nil {
		gst = w.storeAs(st)
	}
	if cfg.Features == nil {
		cfg.Features = features.List(w.features, st, rec)
	}
	g, err := gateway.New(cfg.WithDefaults(), gst, rec)
	if err != nil {
		t.Fatal(err)
	}
	late.Store(g)
	apiCfg := api.Config{Listen: "127.0.0.1:0", Logger: log, Answers: st, Approvals: g, Questions: g, Deliveries: g}
	if cfg.Files != nil {
		apiCfg.Files = cfg.Files
	}
	p := api.New(apiCfg)
	g.AddPlatform(p)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.Run(runCtx) }()
	stopped := false
	in := &instance{cx: rec, g: g, api: p, st: st, logs: logs}
	in.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway Run: %v", err)
		}
		if err := cx.Close(ctx); err != nil {
			t.Logf("codex close: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("store close: %v", err)
		}
	}
	t.Cleanup(in.stop)
	select {
	case <-g.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("gateway not ready")
	}
	return in
}

// waitIdle waits until no lane has a worker. Workers retire just after the
// reply is sent and there is no signal for it, so this polls.
func (in *instance) waitIdle(t *testing.T) {
	t.Helper()
	poll.Until(t, 10*time.Second, "no lane still active", func() bool { return in.g.Stats().ActiveLanes == 0 })
}

// ask posts a message to a lane and returns the answer.
func (in *instance) ask(t testing.TB, lane, text string) api.Response {
	t.Helper()
	out, err := in.tryAsk(lane, text)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryAsk is ask for goroutines other than the test's.
func (in *instance) tryAsk(lane, text string) (api.Response, error) {
	body, _ := json.Marshal(map[string]string{"text": text, "user": "tester"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+in.api.Addr()+"/api/lanes/"+lane+"/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return api.Response{}, fmt.Errorf("ask %q: %w", text, err)
	}
	defer resp.Body.Close()
	var out api.Response
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		return out, fmt.Errorf("ask %q: status %d, decode %v", text, resp.StatusCode, err)
	}
	return out, nil
}

// stream posts a message as user "tester" with Accept: text/event-stream,
// calls onEvent for every event before "done", and returns the done event.
// It returns an error instead of failing the test, so goroutines may use it.
func (in *instance) stream(lane, text string, onEvent func(event, data string)) (api.Response, error) {
	var done api.Response
	body, _ := json.Marshal(map[string]string{"text": text, "user": "tester"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+in.api.Addr()+"/api/lanes/"+lane+"/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return done, fmt.Errorf("stream %q: %w", text, err)
	}
	defer resp.Body.Close()
	event := ""
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			event = e
			continue
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
		case event == "done":
			if err := json.Unmarshal([]byte(data), &done); err != nil {
				return done, fmt.Errorf("done event %s: %w", data, err)
			}
		default:
			onEvent(event, data)
		}
	}
	return done, sc.Err()
}

// askStream streams a message and returns the concatenated deltas, how
// many there were, and the done event.
func (in *instance) askStream(t *testing.T, lane, text string) (string, int, api.Response) {
	t.Helper()
	var deltas strings.Builder
	n := 0
	done, err := in.stream(lane, text, func(event, data string) {
		if event == "delta" {
			var s string
			json.Unmarshal([]byte(data), &s)
			deltas.WriteString(s)
			n++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return deltas.String(), n, done
}

// lastRequestFor returns the raw input of the model's last request for a
// thread.
func (w *world) lastRequestFor(t *testing.T, thread string) string {
	t.Helper()
	reqs := w.model.RequestsForThread(thread)
	if len(reqs) == 0 {
		t.Fatalf("no model request for thread %s", thread)
	}
	return reqs[len(reqs)-1].InputText()
}

func TestIntegrationContextSurvivesEvictionRestartAndNew(t *testing.T) {
	w := newWorld(t)
	cfg := gateway.Config{MaxLive: 1, PreviewInterval: 20 * time.Millisecond}
	gw := w.start(t, cfg)

	first := gw.ask(t, "alpha", "Remember the secret code BANANA-42.")
	if first.Status != "completed" || first.ThreadID == "" {
		t.Fatalf("first answer %+v", first)
	}
	thread := first.ThreadID

	// (a) eviction: a second lane pushes alpha out of the single live slot.
	// A busy lane is skipped, so wait until alpha's worker has retired.
	gw.waitIdle(t)
	if r := gw.ask(t, "beta", "hello from beta"); r.ThreadID == thread {
		t.Fatalf("beta shares alpha's thread")
	}
	if s := gw.g.Stats(); s.LiveLanes != 1 {
		t.Errorf("live lanes %d, want 1 after eviction", s.LiveLanes)
	}
	if released, _ := gw.cx.snapshot(); len(released) != 1 || released[0] != thread {
		t.Fatalf("released %v, want alpha's thread %s", released, thread)
	}
	r := gw.ask(t, "alpha", "What was the secret code?")
	if r.ThreadID != thread {
		t.Fatalf("after eviction alpha answered on %s, want %s resumed", r.ThreadID, thread)
	}
	if _, outcomes := gw.cx.snapshot(); outcomes[len(outcomes)-1] != "resumed:"+thread {
		t.Errorf("ensure outcomes %v, want alpha's thread resumed after eviction", outcomes)
	}
	if got := w.lastRequestFor(t, thread); !strings.Contains(got, "BANANA-42") {
		t.Errorf("after eviction the model request lacks the secret:\n%s", got)
	}

	// (b) restart the whole gateway: new codex process, reopened store.
	gw.stop()
	gw = w.start(t, cfg)
	r = gw.ask(t, "alpha", "And after the restart?")
	if r.ThreadID != thread || len(r.Notices) != 0 {
		t.Fatalf("after restart %+v, want thread %s and no notice", r, thread)
	}
	if got := w.lastRequestFor(t, thread); !strings.Contains(got, "BANANA-42") {
		t.Errorf("after restart the model request lacks the secret:\n%s", got)
	}
	if _, outcomes := gw.cx.snapshot(); len(outcomes) != 1 || outcomes[0] != "resumed:"+thread {
		t.Errorf("after restart ensure outcomes %v, want one resume of %s", outcomes, thread)
	}

	// Exactly once: three turns, three user rows and three assistant rows
	// (codex's echoed userMessage item is not stored again).
	msgs, err := gw.st.Transcript(context.Background(), "v1:api:alpha", 100)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]int{}
	for _, m := range msgs {
		roles[m.Role]++
	}
	if roles["user"] != 3 || roles["assistant"] != 3 || len(msgs) != 6 {
		t.Errorf("transcript roles %v (%d rows), want 3 user + 3 assistant", roles, len(msgs))
	}

	// Streaming: a slow model's reply arrives as several SSE deltas that add
	// up to the reply in the done event.
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), "Stream this") {
			return codextest.Reply{Text: "one two three four five six", Chunks: 6, ChunkDelay: 80 * time.Millisecond}
		}
		return codextest.DefaultReply(req)
	})
	deltas, n, done := gw.askStream(t, "alpha", "Stream this please.")
	if deltas != "one two three four five six" || done.Reply != deltas || done.ThreadID != thread || n < 2 {
		t.Errorf("SSE %d deltas %q, done %+v; want several deltas adding up to the reply", n, deltas, done)
	}
	w.model.Respond(nil)

	// /new: a fresh thread whose request lacks the earlier text.
	if r := gw.ask(t, "alpha", "/new"); !strings.Contains(r.Reply, "new conversation") {
		t.Fatalf("/new answered %+v", r)
	}
	fresh := gw.ask(t, "alpha", "Do you know any code?")
	if fresh.ThreadID == "" || fresh.ThreadID == thread {
		t.Fatalf("after /new thread %q, want a new one", fresh.ThreadID)
	}
	if got := w.lastRequestFor(t, fresh.ThreadID); strings.Contains(got, "BANANA-42") {
		t.Errorf("after /new the model still sees the secret:\n%s", got)
	}
	status := gw.ask(t, "alpha", "/status")
	if !strings.Contains(status.Reply, fresh.ThreadID) || !strings.Contains(status.Reply, "confirmed") {
		t.Errorf("/status %q", status.Reply)
	}
}

func TestIntegrationResumeFailureNotifiesOnce(t *testing.T) {
	w := newWorld(t)
	gw := w.start(t, gateway.Config{})
	first := gw.ask(t, "alpha", "Remember PINEAPPLE-7.")
	gw.stop()

	w.home = codextest.Home(t) // the rollout is gone: resume must be refused
	gw = w.start(t, gateway.Config{})
	r := gw.ask(t, "alpha", "Still there?")
	if r.ThreadID == "" || r.ThreadID == first.ThreadID {
		t.Fatalf("after a lost rollout answered on %q, want a new thread", r.ThreadID)
	}
	if len(r.Notices) != 1 || r.Notices[0] != gateway.ReplacedNotice {
		t.Errorf("notices %q, want exactly one %q", r.Notices, gateway.ReplacedNotice)
	}
	again := gw.ask(t, "alpha", "And now?")
	if again.ThreadID != r.ThreadID || len(again.Notices) != 0 {
		t.Errorf("second turn %+v, want the new thread and no further notice", again)
	}

	// /stop interrupts a turn stuck on the model; the thread is kept.
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), "hang please") {
			return codextest.Reply{HangBeforeHeaders: true}
		}
		return codextest.DefaultReply(req)
	})
	before := len(w.model.Requests())
	hung := make(chan api.Response, 1)
	go func() {
		res, err := gw.tryAsk("alpha", "hang please")
		if err != nil {
			t.Error(err)
		}
		hung <- res
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := w.model.WaitRequests(ctx, before+1); err != nil {
		t.Fatal(err)
	}
	if stop := gw.ask(t, "alpha", "/stop"); !strings.Contains(stop.Reply, "Stopping") {
		t.Errorf("/stop answered %q", stop.Reply)
	}
	select {
	case res := <-hung:
		if res.Status != "interrupted" || !strings.HasSuffix(res.Reply, "(interrupted)") || res.ThreadID != r.ThreadID {
			t.Errorf("stopped turn answered %+v", res)
		}
	case <-ctx.Done():
		t.Fatal("the stopped turn was never answered")
	}
}

// TestIntegrationTurnTimeoutIsTold: a turn the watchdog stops (real
// app-server, model that never answers) is answered as timed out, naming the
// limit, distinct from /stop; /retry runs it again.
func TestIntegrationTurnTimeoutIsTold(t *testing.T) {
	w := newWorld(t)
	w.turnTimeout = 2 * time.Second
	var hang atomic.Bool
	hang.Store(true)
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		if hang.Load() && strings.Contains(req.LastUserText(), "slow job") {
			return codextest.Reply{HangBeforeHeaders: true}
		}
		return codextest.DefaultReply(req)
	})
	gw := w.start(t, gateway.Config{})
	res := gw.ask(t, "alpha", "slow job")
	if res.Status != "timed_out" {
		t.Errorf("status %q, want timed_out", res.Status)
	}
	want := "Codex took longer than 2s; the turn was stopped. /retry to run it again."
	if !strings.Contains(res.Reply, want) || strings.Contains(res.Reply, "(interrupted)") {
		t.Errorf("reply %q, want it to say %q and not look like /stop", res.Reply, want)
	}
	hang.Store(false)
	again := gw.ask(t, "alpha", "/retry")
	if again.Status != "completed" || !strings.Contains(again.Reply, "slow job") || again.ThreadID != res.ThreadID {
		t.Errorf("/retry answered %+v, want the slow job run again on thread %s", again, res.ThreadID)
	}
}
