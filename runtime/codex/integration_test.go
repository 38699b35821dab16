package codex_test

// Integration tests of the client against the REAL codex app-server binary
// (found by codextest.CodexBinary) talking to the fake Responses API model of
// codextest on 127.0.0.1, each with its own CODEX_HOME in a temp dir.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

const secretPrompt = "Remember this secret code: BANANA-42"

// integrationContext bounds one integration test; nothing here should take
// more than a few seconds, so hitting it means a hang.
func integrationContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startClient starts a client on the real binary against m with CODEX_HOME
// home; tweak adjusts the options. The client is closed at cleanup.
func startClient(t *testing.T, m *codextest.Model, home string, tweak ...func(*codex.Options)) *codex.Client {
	t.Helper()
	opts := codex.Options{
		Command:      codextest.CodexBinary(t),
		Args:         codextest.Args(m.URL),
		Home:         home,
		Env:          codextest.Env(),
		Dir:          t.TempDir(),
		StartTimeout: 20 * time.Second,
		ClientName:   "gatewayd-test",
	}
	for _, f := range tweak {
		f(&opts)
	}
	c, err := codex.Start(integrationContext(t), opts)
	if err != nil {
		t.Fatalf("codex.Start: %v", err)
	}
	t.Cleanup(func() { closeClient(t, c) })
	return c
}

func closeClient(t *testing.T, c *codex.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Close(ctx); err != nil && !errors.Is(err, codex.ErrClosed) {
		t.Errorf("Close: %v", err)
	}
}

func ensure(t *testing.T, ctx context.Context, c *codex.Client, storedID string, want codex.Outcome) codex.Ensured {
	t.Helper()
	got, err := c.EnsureThread(ctx, storedID, codex.ThreadConfig{})
	if err != nil {
		t.Fatalf("EnsureThread(%q): %v", storedID, err)
	}
	if got.Outcome != want {
		t.Fatalf("EnsureThread(%q) outcome = %v (reason %q), want %v", storedID, got.Outcome, got.Reason, want)
	}
	if got.ThreadID == "" {
		t.Fatalf("EnsureThread(%q) returned no thread id", storedID)
	}
	return got
}

// completedTurn runs a turn that must complete and reply with the default echo.
func completedTurn(t *testing.T, ctx context.Context, c *codex.Client, threadID, text string) codex.TurnResult {
	t.Helper()
	res, err := c.RunTurn(ctx, threadID, codex.TurnInput{Text: text}, codex.TurnEvents{})
	if err != nil {
		t.Fatalf("RunTurn(%q): %v", text, err)
	}
	if res.Status != codex.TurnStatus("completed") {
		t.Fatalf("RunTurn(%q) status = %q, error %+v", text, res.Status, res.Error)
	}
	if want := "ECHO: " + text; res.Text != want {
		t.Fatalf("RunTurn(%q) text = %q, want %q", text, res.Text, want)
	}
	if res.ThreadID != threadID || res.TurnID == "" {
		t.Errorf("RunTurn result ids: thread %q turn %q, want thread %q and a turn id", res.ThreadID, res.TurnID, threadID)
	}
	return res
}

// lastRequest returns the fake model's latest request for threadID.
func lastRequest(t *testing.T, m *codextest.Model, threadID string) codextest.Request {
	t.Helper()
	reqs := m.RequestsForThread(threadID)
	if len(reqs) == 0 {
		t.Fatalf("the model got no request for thread %s", threadID)
	}
	return reqs[len(reqs)-1]
}

// codexPIDs lists the live processes whose environment holds CODEX_HOME=home.
// The contract exposes no pid, and a unique temp home identifies the test's
// app-server exactly.
func codexPIDs(t *testing.T, home string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	want := []byte("CODEX_HOME=" + home)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil { // gone, or not ours
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// killCodexGroups SIGKILLs the process group of every app-server using home,
// as a crash or an OOM kill would, and returns how many groups it killed.
func killCodexGroups(t *testing.T, home string) int {
	t.Helper()
	groups := map[int]bool{}
	for _, pid := range codexPIDs(t, home) {
		pgid, err := syscall.Getpgid(pid)
		if err != nil {
			continue
		}
		if pgid == syscall.Getpgrp() {
			t.Fatalf("app-server pid %d shares the test's process group: it must run in its own", pid)
		}
		groups[pgid] = true
	}
	for pgid := range groups {
		if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("kill process group %d: %v", pgid, err)
		}
	}
	return len(groups)
}

// waitNoCodex waits until no process uses home. There is no signal for the
// death of a process we do not own, so this polls with a deadline.
func waitNoCodex(t *testing.T, ctx context.Context, home string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		pids := codexPIDs(t, home)
		if len(pids) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("app-server processes %v for %s still alive (orphans?)", pids, home)
		case <-tick.C:
		}
	}
}

func TestIntegrationContextSurvivesProcessKill(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		r := codextest.DefaultReply(req)
		r.Usage = codextest.Usage{InputTokens: 1000, OutputTokens: 20}
		return r
	})
	home := codextest.Home(t)

	a := startClient(t, m, home)
	first := ensure(t, ctx, a, "", codex.OutcomeStarted)
	res := completedTurn(t, ctx, a, first.ThreadID, secretPrompt)
	if res.Usage.TotalTokens != 1020 {
		t.Errorf("turn usage total = %d, want the model's 1020", res.Usage.TotalTokens)
	}
	if u, ok := a.Usage(first.ThreadID); !ok || u.TotalTokens != 1020 {
		t.Errorf("Usage(thread) = %+v, %v; want total 1020", u, ok)
	}

	if n := killCodexGroups(t, home); n != 1 {
		t.Fatalf("killed %d app-server process groups, want exactly 1", n)
	}
	closeClient(t, a) // stop A's supervisor from restarting; A's app-server is already dead
	waitNoCodex(t, ctx, home)

	b := startClient(t, m, home)
	resumed := ensure(t, ctx, b, first.ThreadID, codex.OutcomeResumed)
	if resumed.ThreadID != first.ThreadID {
		t.Fatalf("resumed thread id = %q, want %q", resumed.ThreadID, first.ThreadID)
	}
	completedTurn(t, ctx, b, resumed.ThreadID, "What was the secret code?")
	req := lastRequest(t, m, resumed.ThreadID)
	for _, want := range []string{secretPrompt, "ECHO: " + secretPrompt} {
		if !strings.Contains(req.InputText(), want) {
			t.Errorf("model request after resume in process B lacks turn 1's %q", want)
		}
	}
	if got := req.TurnMetadata("history_initialization"); got != "cold_resume" {
		t.Errorf("history_initialization = %q, want cold_resume", got)
	}

	fresh := ensure(t, ctx, b, "", codex.OutcomeStarted)
	if fresh.ThreadID == first.ThreadID {
		t.Fatal("a fresh thread reused the resumed thread's id")
	}
	completedTurn(t, ctx, b, fresh.ThreadID, "What was the secret code?")
	if strings.Contains(lastRequest(t, m, fresh.ThreadID).InputText(), "BANANA-42") {
		t.Error("a fresh thread's model request contains the other thread's secret")
	}
}

// removeRollout deletes the rollout file(s) of threadID under home/sessions
// and returns how many it removed.
func removeRollout(t *testing.T, home, threadID string) int {
	t.Helper()
	removed := 0
	err := filepath.WalkDir(filepath.Join(home, "sessions"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), threadID+".jsonl") {
			removed++
			return os.Remove(path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("remove rollout of %s: %v", threadID, err)
	}
	return removed
}

func TestIntegrationResumeRefusedFallsBackToFreshThread(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	home := codextest.Home(t)

	a := startClient(t, m, home)
	deleted := ensure(t, ctx, a, "", codex.OutcomeStarted)
	completedTurn(t, ctx, a, deleted.ThreadID, secretPrompt)
	closeClient(t, a)
	if n := removeRollout(t, home, deleted.ThreadID); n != 1 {
		t.Fatalf("removed %d rollout files for %s, want 1", n, deleted.ThreadID)
	}

	b := startClient(t, m, home)
	tests := []struct {
		name     string
		storedID string
	}{
		{name: "unknown well-formed uuid", storedID: "019a0c2e-5b1d-7c3e-9f40-1a2b3c4d5e6f"},
		{name: "deleted rollout", storedID: deleted.ThreadID},
		{name: "malformed id", storedID: "not-a-thread-id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ensure(t, ctx, b, tt.storedID, codex.OutcomeReplaced)
			if got.PreviousID != tt.storedID {
				t.Errorf("PreviousID = %q, want %q", got.PreviousID, tt.storedID)
			}
			if got.ThreadID == tt.storedID {
				t.Errorf("replacement thread kept the refused id %q", tt.storedID)
			}
			if got.Reason == "" {
				t.Error("Reason is empty; the caller must be able to tell the user why")
			}
			text := "hello after " + tt.name
			completedTurn(t, ctx, b, got.ThreadID, text)
			if strings.Contains(lastRequest(t, m, got.ThreadID).InputText(), "BANANA-42") {
				t.Error("the replacement thread's request carries the lost thread's history")
			}
		})
	}
}

func TestIntegrationConcurrentLanesOnOneProcess(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		r := codextest.DefaultReply(req)
		r.Chunks, r.ChunkDelay = 5, 20*time.Millisecond
		return r
	})
	c := startClient(t, m, codextest.Home(t))

	const lanes = 20
	type laneResult struct {
		threadID string
		res      codex.TurnResult
		deltas   string
		err      error
	}
	results := make([]laneResult, lanes)
	var wg sync.WaitGroup
	for i := range lanes {
		wg.Go(func() {
			ens, err := c.EnsureThread(ctx, "", codex.ThreadConfig{})
			if err != nil {
				results[i].err = fmt.Errorf("EnsureThread: %w", err)
				return
			}
			var mu sync.Mutex
			var deltas strings.Builder
			res, err := c.RunTurn(ctx, ens.ThreadID, codex.TurnInput{Text: laneText(i)}, codex.TurnEvents{Delta: func(d string) {
				mu.Lock()
				defer mu.Unlock()
				deltas.WriteString(d)
			}})
			mu.Lock()
			defer mu.Unlock()
			results[i] = laneResult{threadID: ens.ThreadID, res: res, deltas: deltas.String(), err: err}
		})
	}
	wg.Wait()

	seen := map[string]int{}
	for i, r := range results {
		if r.err != nil {
			t.Errorf("lane %d: %v", i, r.err)
			continue
		}
		want := "ECHO: " + laneText(i)
		if r.res.Status != "completed" || r.res.Text != want {
			t.Errorf("lane %d: status %q text %q, want completed %q", i, r.res.Status, r.res.Text, want)
		}
		if r.deltas != want {
			t.Errorf("lane %d: streamed deltas %q, want %q", i, r.deltas, want)
		}
		if prev, dup := seen[r.threadID]; dup {
			t.Errorf("lanes %d and %d share thread %s", prev, i, r.threadID)
		}
		seen[r.threadID] = i
	}
	for _, req := range m.Requests() {
		i, ok := seen[req.ThreadID()]
		if !ok {
			t.Errorf("model request for unknown thread %q", req.ThreadID())
			continue
		}
		if got := req.LastUserText(); got != laneText(i) {
			t.Errorf("thread of lane %d sent %q to the model, want %q", i, got, laneText(i))
		}
	}
}

func laneText(i int) string { return fmt.Sprintf("lane %02d says hello", i) }

// hangOnMarker makes the model hang before headers for prompts containing
// "HANG" and echo otherwise.
func hangOnMarker(req codextest.Request) codextest.Reply {
	if strings.Contains(req.LastUserText(), "HANG") {
		return codextest.Reply{HangBeforeHeaders: true}
	}
	return codextest.DefaultReply(req)
}

func TestIntegrationInterruptHungModel(t *testing.T) {
	t.Parallel()
	t.Run("watchdog", func(t *testing.T) {
		ctx := integrationContext(t)
		m := codextest.NewModel(t)
		m.Respond(hangOnMarker)
		c := startClient(t, m, codextest.Home(t), func(o *codex.Options) { o.TurnTimeout = 700 * time.Millisecond })
		th := ensure(t, ctx, c, "", codex.OutcomeStarted)

		res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "HANG forever"}, codex.TurnEvents{})
		if err != nil && !errors.Is(err, codex.ErrTimeout) {
			t.Fatalf("RunTurn: %v, want nil or ErrTimeout", err)
		}
		if res.Status != "interrupted" || !res.WatchdogFired {
			t.Fatalf("status %q, watchdog fired %v; want interrupted by the watchdog", res.Status, res.WatchdogFired)
		}
		completedTurn(t, ctx, c, th.ThreadID, "are you back?")
	})

	t.Run("explicit", func(t *testing.T) {
		ctx := integrationContext(t)
		m := codextest.NewModel(t)
		m.Respond(hangOnMarker)
		c := startClient(t, m, codextest.Home(t), func(o *codex.Options) { o.TurnTimeout = time.Minute })
		th := ensure(t, ctx, c, "", codex.OutcomeStarted)

		started := make(chan string, 1)
		type outcome struct {
			res codex.TurnResult
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "HANG until interrupted"}, codex.TurnEvents{
				Started: func(turnID string) { started <- turnID },
			})
			done <- outcome{res, err}
		}()
		var turnID string
		select {
		case turnID = <-started:
		case <-ctx.Done():
			t.Fatal("turn never started")
		}
		if _, err := m.WaitRequests(ctx, 1); err != nil { // the model now holds the request, hanging
			t.Fatal(err)
		}
		if err := c.Interrupt(ctx, th.ThreadID); err != nil {
			t.Fatalf("Interrupt: %v", err)
		}
		got := <-done
		if got.err != nil {
			t.Fatalf("RunTurn after Interrupt: %v", got.err)
		}
		if got.res.Status != "interrupted" || got.res.WatchdogFired || got.res.TurnID != turnID {
			t.Fatalf("result status %q watchdog %v turn %q; want interrupted, no watchdog, turn %q",
				got.res.Status, got.res.WatchdogFired, got.res.TurnID, turnID)
		}
		if err := c.Interrupt(ctx, th.ThreadID); !errors.Is(err, codex.ErrNoActiveTurn) {
			t.Errorf("second Interrupt: %v, want ErrNoActiveTurn", err)
		}
		completedTurn(t, ctx, c, th.ThreadID, "are you back?")
	})
}

func TestIntegrationCompactionThenResumeInNewProcess(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	home := codextest.Home(t)

	a := startClient(t, m, home)
	th := ensure(t, ctx, a, "", codex.OutcomeStarted)
	completedTurn(t, ctx, a, th.ThreadID, secretPrompt)
	completedTurn(t, ctx, a, th.ThreadID, "second message")

	before, after, err := a.Compact(ctx, th.ThreadID)
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	t.Logf("usage before compaction %+v, after %+v", before, after)
	if before.TotalTokens == 0 {
		t.Error("usage before compaction is zero; the thread had two turns")
	}
	if req := lastRequest(t, m, th.ThreadID); !req.IsCompaction() {
		t.Fatalf("the model's last request was not a compaction request: %q", req.LastUserText())
	}
	closeClient(t, a)

	b := startClient(t, m, home)
	ensure(t, ctx, b, th.ThreadID, codex.OutcomeResumed)
	completedTurn(t, ctx, b, th.ThreadID, "What was the secret code?")
	input := lastRequest(t, m, th.ThreadID).InputText()
	for _, want := range []string{codextest.CompactionSummary, secretPrompt} {
		if !strings.Contains(input, want) {
			t.Errorf("request after compaction and resume lacks %q", want)
		}
	}
}

func TestIntegrationStaleWriterIsNotReplaced(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	home := codextest.Home(t)

	a := startClient(t, m, home)
	th := ensure(t, ctx, a, "", codex.OutcomeStarted)
	completedTurn(t, ctx, a, th.ThreadID, secretPrompt)
	ensure(t, ctx, a, th.ThreadID, codex.OutcomeLoaded) // still loaded: no RPC

	b := startClient(t, m, home)
	got, err := b.EnsureThread(ctx, th.ThreadID, codex.ThreadConfig{})
	if !errors.Is(err, codex.ErrStaleWriter) {
		t.Fatalf("EnsureThread while process A owns the thread: %+v, %v; want ErrStaleWriter", got, err)
	}
	if errors.Is(err, codex.ErrThreadLost) {
		t.Errorf("a stale writer was classified as a lost thread: %v", err)
	}

	closeClient(t, a) // the stale owner goes away
	ensure(t, ctx, b, th.ThreadID, codex.OutcomeResumed)
	completedTurn(t, ctx, b, th.ThreadID, "still there?")
	if !strings.Contains(lastRequest(t, m, th.ThreadID).InputText(), "BANANA-42") {
		t.Error("the thread resumed after the stale owner left lost its history")
	}
}

func TestIntegrationReleaseKeepsThreadOnDisk(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	c := startClient(t, m, codextest.Home(t))

	th := ensure(t, ctx, c, "", codex.OutcomeStarted)
	completedTurn(t, ctx, c, th.ThreadID, secretPrompt)
	if err := c.Release(ctx, th.ThreadID); err != nil {
		t.Fatalf("Release: %v", err)
	}
	ensure(t, ctx, c, th.ThreadID, codex.OutcomeResumed)
	completedTurn(t, ctx, c, th.ThreadID, "after eviction")
	if !strings.Contains(lastRequest(t, m, th.ThreadID).InputText(), "BANANA-42") {
		t.Error("the released thread lost its history")
	}
}

func TestIntegrationFailedModelTurn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reply     codextest.Reply
		wantInfo  string // substring of codexErrorInfo
		wantError string // substring of the message
	}{
		{name: "http 500", reply: codextest.Reply{HTTPStatus: 500}, wantInfo: "internalServerError"},
		{name: "http 429", reply: codextest.Reply{HTTPStatus: 429}, wantInfo: "429"},
		{name: "stream failure", reply: codextest.Reply{StreamFailure: "fake failure"}, wantError: "fake failure"},
	}
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	c := startClient(t, m, codextest.Home(t))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m.Respond(func(req codextest.Request) codextest.Reply {
				if strings.Contains(req.LastUserText(), "FAIL") {
					return tt.reply
				}
				return codextest.DefaultReply(req)
			})
			th := ensure(t, ctx, c, "", codex.OutcomeStarted)
			res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "FAIL please"}, codex.TurnEvents{})
			if err != nil {
				t.Fatalf("RunTurn: %v (a failed turn is a result, not an error)", err)
			}
			if res.Status != "failed" || res.Error == nil {
				t.Fatalf("status %q error %+v, want failed with an error", res.Status, res.Error)
			}
			if !strings.Contains(res.Error.Info, tt.wantInfo) || !strings.Contains(res.Error.Message, tt.wantError) {
				t.Errorf("turn error %+v, want info containing %q and message containing %q", *res.Error, tt.wantInfo, tt.wantError)
			}
			completedTurn(t, ctx, c, th.ThreadID, "try again") // the thread survives a failed turn
		})
	}
}

func TestIntegrationApprovals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		decision   codex.Decision
		wantStatus codex.TurnStatus
		wantRan    bool
	}{
		{name: "accept runs the command", decision: codex.DecisionAccept, wantStatus: "completed", wantRan: true},
		{name: "decline lets the model continue", decision: codex.DecisionDecline, wantStatus: "completed"},
		{name: "cancel interrupts the turn", decision: codex.DecisionCancel, wantStatus: "interrupted"},
	}
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), "run it") {
			return codextest.Reply{ToolCall: codextest.ExecCommand("call_approve", "echo APPROVED-$((6*7))")}
		}
		return codextest.DefaultReply(req)
	})
	var mu sync.Mutex
	var asked []codex.ApprovalRequest
	decision := codex.DecisionDecline
	c := startClient(t, m, codextest.Home(t), func(o *codex.Options) {
		o.Approvals = func(_ context.Context, req codex.ApprovalRequest) codex.Decision {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req)
			return decision
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			asked, decision = nil, tt.decision
			mu.Unlock()
			th, err := c.EnsureThread(ctx, "", codex.ThreadConfig{ApprovalPolicy: "untrusted", Sandbox: "danger-full-access"})
			if err != nil {
				t.Fatalf("EnsureThread: %v", err)
			}
			res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "please run it"}, codex.TurnEvents{})
			if err != nil {
				t.Fatalf("RunTurn: %v", err)
			}
			if res.Status != tt.wantStatus {
				t.Fatalf("status = %q (error %+v), want %q", res.Status, res.Error, tt.wantStatus)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 {
				t.Fatalf("approval requests = %d, want 1", len(asked))
			}
			if q := asked[0]; q.Kind != "command" || q.ThreadID != th.ThreadID || q.ItemID != "call_approve" ||
				!strings.Contains(q.Command, "APPROVED-$((6*7))") {
				t.Errorf("approval request = %+v", q)
			}
			reqs := m.RequestsForThread(th.ThreadID)
			ran := false
			for _, r := range reqs {
				if out, ok := r.ToolOutput(); ok && strings.Contains(out, "APPROVED-42") {
					ran = true
				}
			}
			if ran != tt.wantRan {
				t.Errorf("command ran = %v, want %v", ran, tt.wantRan)
			}
			if tt.wantRan && !strings.Contains(res.Text, "APPROVED-42") {
				t.Errorf("final text %q lacks the command's output", res.Text)
			}
		})
	}
}

func TestIntegrationSteerRunningTurn(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		if req.LastUserText() == "tell me a long story" {
			return codextest.Reply{Text: strings.Repeat("once upon a time ", 20), Chunks: 80, ChunkDelay: 25 * time.Millisecond}
		}
		return codextest.DefaultReply(req)
	})
	c := startClient(t, m, codextest.Home(t))
	th := ensure(t, ctx, c, "", codex.OutcomeStarted)

	streaming := make(chan struct{})
	var once sync.Once
	type outcome struct {
		res codex.TurnResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "tell me a long story"}, codex.TurnEvents{
			Delta: func(string) { once.Do(func() { close(streaming) }) },
		})
		done <- outcome{res, err}
	}()
	select {
	case <-streaming:
	case <-ctx.Done():
		t.Fatal("the long answer never started streaming")
	}
	if err := c.Steer(ctx, th.ThreadID, "STEERED-XYZ"); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	got := <-done
	if got.err != nil || got.res.Status != "completed" {
		t.Fatalf("RunTurn: status %q, err %v", got.res.Status, got.err)
	}
	if !strings.HasSuffix(got.res.Text, "ECHO: STEERED-XYZ") {
		t.Errorf("final text = %q, want the answer to the steer", got.res.Text)
	}
	reqs := m.RequestsForThread(th.ThreadID)
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2 (the cut stream and the steered one)", len(reqs))
	}
	steered := reqs[1]
	if steered.LastUserText() != "STEERED-XYZ" || !strings.Contains(steered.InputText(), "tell me a long story") {
		t.Errorf("steered request: last user text %q; want the steer after the original prompt", steered.LastUserText())
	}
	if steered.TurnMetadata("turn_id") != reqs[0].TurnMetadata("turn_id") {
		t.Error("the steer started a new turn instead of landing in the running one")
	}
	if err := c.Steer(ctx, th.ThreadID, "too late"); !errors.Is(err, codex.ErrNoActiveTurn) {
		t.Errorf("Steer after the turn ended: %v, want ErrNoActiveTurn", err)
	}
}

// TestIntegrationTurnCwdMovesTheThread: turn/start with a cwd makes that
// turn's model request, and the later ones, name the new directory as the
// environment's cwd, and under workspace-write as the writable directory in
// place of the old one (so turn/start needs no sandboxPolicy of its own); a
// thread resumed by another process without a cwd keeps it (docs/codex-app-server.md §11).
func TestIntegrationTurnCwdMovesTheThread(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	home := codextest.Home(t)
	first, second := t.TempDir(), t.TempDir()
	c := startClient(t, m, home)
	th, err := c.EnsureThread(ctx, "", codex.ThreadConfig{Cwd: first, Sandbox: "workspace-write"})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		cwd  string // TurnInput.Cwd
		want string // the directory the request must name
	}{
		{"thread/start's cwd", "", first},
		{"moved by turn/start", second, second},
		{"kept by the next turn", "", second},
	}
	for _, s := range steps {
		if _, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "where now?", Cwd: s.cwd}, codex.TurnEvents{}); err != nil {
			t.Fatalf("%s: RunTurn: %v", s.name, err)
		}
		req := lastRequest(t, m, th.ThreadID)
		if got := req.Environment("cwd"); got != s.want {
			t.Fatalf("%s: the model request's cwd = %q, want %s:\n%s", s.name, got, s.want, req.InputText())
		}
		fs := req.Environment("filesystem")
		for _, dir := range []string{first, second} {
			writable := strings.Contains(fs, `<entry access="write"><path>`+dir+`</path></entry>`)
			if writable != (dir == s.want) {
				t.Errorf("%s: %s writable = %v, want only %s writable:\n%s", s.name, dir, writable, s.want, fs)
			}
		}
	}

	closeClient(t, c)
	c = startClient(t, m, home)
	ensure(t, ctx, c, th.ThreadID, codex.OutcomeResumed)
	if _, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "and after a restart?"}, codex.TurnEvents{}); err != nil {
		t.Fatal(err)
	}
	if req := lastRequest(t, m, th.ThreadID); req.Environment("cwd") != second {
		t.Fatalf("after resume the model request's cwd = %q, want %s:\n%s", req.Environment("cwd"), second, req.InputText())
	}
}

// The real binary: a bare CODEX_HOME without a provider override has no
// account and needs an OpenAI login; the fake provider of codextest needs
// none. A device-code login cannot reach auth.openai.com offline: it fails
// at once with the app-server's reason (measured: 47 ms).
func TestRealAccountRead(t *testing.T) {
	t.Parallel()
	m := codextest.NewModel(t)
	ctx := integrationContext(t)
	bare := startClient(t, m, codextest.Home(t), func(o *codex.Options) { o.Args, o.Env = nil, nil })
	a, err := bare.Account(ctx)
	if err != nil {
		t.Fatalf("bare Account: %v", err)
	}
	if a.Type != "" || !a.RequiresOpenAIAuth || a.Usable() {
		t.Errorf("bare CODEX_HOME account = %+v, want none with OpenAI auth required", a)
	}
	// Offline (as here) auth.openai.com is unreachable; with a network a
	// real device code comes back. Either way the answer has a shape.
	login, err := bare.StartLogin(ctx)
	switch {
	case err != nil && !strings.Contains(codex.RPCMessage(err), "device code"):
		t.Errorf("StartLogin error = %v, want the device-code failure", err)
	case err == nil && (login.VerificationURL == "" || login.UserCode == ""):
		t.Errorf("StartLogin = %+v, want a URL and a code", login)
	}

	provider := startClient(t, m, codextest.Home(t))
	a, err = provider.Account(ctx)
	if err != nil {
		t.Fatalf("provider Account: %v", err)
	}
	if a.RequiresOpenAIAuth || !a.Usable() {
		t.Errorf("fake provider account = %+v, want no OpenAI auth required", a)
	}
	if n := len(m.Requests()); n != 0 {
		t.Errorf("reading the account sent %d model requests", n)
	}
}

// The real binary: a bare CODEX_HOME logged in with an API key through
// the app-server becomes usable (account/updated says so), and its turns
// then reach the OpenAI provider with that key (openai_base_url points it
// at the fake model; codex first tries a WebSocket there, which the fake
// does not speak, and falls back to HTTP after five tries).
func TestRealAPIKeyLogin(t *testing.T) {
	t.Parallel()
	m := codextest.NewModel(t)
	ctx := integrationContext(t)
	updated := make(chan codex.AccountUpdate, 4)
	c := startClient(t, m, codextest.Home(t), func(o *codex.Options) {
		o.Args = []string{"-c", `approval_policy="never"`, "-c", "check_for_update_on_startup=false",
			"-c", "analytics.enabled=false", "-c", "features.plugins=false"}
		o.Args = append(o.Args, "-c", fmt.Sprintf("openai_base_url=%q", strings.TrimRight(m.URL, "/")+"/v1"))
		o.Env = nil
		o.OnAccount = func(u codex.AccountUpdate) { updated <- u }
	})
	if a, err := c.Account(ctx); err != nil || a.Usable() {
		t.Fatalf("before the login: %+v, %v; want an account that needs a login", a, err)
	}
	const key = "sk-test-login-key"
	if err := c.LoginAPIKey(ctx, key); err != nil {
		t.Fatalf("LoginAPIKey: %v", err)
	}
	select {
	case u := <-updated:
		if u.AuthMode != "apikey" && u.AuthMode != "apiKey" {
			t.Errorf("account/updated %+v, want the API key's auth mode", u)
		}
	case <-ctx.Done():
		t.Fatal("no account/updated after the login")
	}
	a, err := c.Account(ctx)
	if err != nil || a.Type != "apiKey" || !a.Usable() {
		t.Fatalf("after the login: %+v, %v; want a usable apiKey account", a, err)
	}
	th := ensure(t, ctx, c, "", codex.OutcomeStarted)
	res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "hello"}, codex.TurnEvents{})
	if err != nil || res.Status != "completed" {
		for _, r := range m.Requests() {
			t.Logf("model request %s %v", r.Path, r.Header)
		}
		t.Fatalf("turn after the login: %s, %v", res.Status, err)
	}
	req := lastRequest(t, m, th.ThreadID)
	if got := req.Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("the model request's Authorization = %q, want the logged-in key", got)
	}
	// codex itself would take an empty key (and fail every turn after).
	for _, bad := range []string{"", "  ", "sk-two words"} {
		if err := c.LoginAPIKey(ctx, bad); err == nil {
			t.Errorf("LoginAPIKey(%q) = nil, want a refusal", bad)
		}
	}
	if a, err := c.Account(ctx); err != nil || a.Type != "apiKey" {
		t.Errorf("after the refused keys: %+v, %v; want the first login kept", a, err)
	}
}
