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
		// The watchdog also bounds the next turn, which must complete: on
		// two busy cores a turn of the instant model has taken over 700 ms
		// (the timeout this test had), so the bound leaves it room.
		c := startClient(t, m, codextest.Home(t), func(o *codex.Options) { o.TurnTimeout = 3 * time.Second })
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
