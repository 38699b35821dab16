package codex_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// BenchmarkIsolationCost is what codex.isolation: lanes costs a chat,
// against codex.isolation: none, on the real app-server and the fake
// model (docs/performance.md). Both app-servers run side by side and
// every op is one new chat on each, lanes first then none, so the
// machine's load falls on both alike: thread/start in a new lane's
// worktree (a git checkout with an AGENTS.md), the first turn, then a
// follow-up turn. The metrics are medians over the run's ops, per
// configuration, and the ratios lanes/none of a new chat (thread/start
// and first turn) and of a follow-up turn: the goal is at most 1.15.
//
//	go test -run '^$' -bench BenchmarkIsolationCost -benchtime 5x ./runtime/codex/
func BenchmarkIsolationCost(b *testing.B) {
	if testing.Short() {
		b.Skip("starts the real app-server")
	}
	var runs [2]chatRun
	for i, lanes := range []bool{true, false} {
		runs[i] = chatRun{lanes: lanes, m: codextest.NewModel(b), root: b.TempDir()}
		runs[i].c = startBenchClient(b, runs[i].m, runs[i].root, lanes)
	}
	ctx := b.Context()
	for b.Loop() {
		for i := range runs {
			runs[i].chat(b, ctx)
		}
	}
	for _, r := range runs {
		r.report(b)
	}
	b.ReportMetric(medianMS(runs[0].newChat)/medianMS(runs[1].newChat), "new-chat-ratio")
	b.ReportMetric(medianMS(runs[0].followUp)/medianMS(runs[1].followUp), "follow-up-ratio")
}

// chatRun is one configuration's app-server and the times of its chats.
type chatRun struct {
	lanes                           bool
	m                               *codextest.Model
	root                            string
	c                               *codex.Client
	start, first, newChat, followUp []time.Duration
}

// chat times one new chat: thread/start, the first turn, a follow-up.
func (r *chatRun) chat(b *testing.B, ctx context.Context) {
	cfg := benchLane(b, r.root, len(r.start), r.lanes)
	t0 := time.Now()
	th, err := r.c.EnsureThread(ctx, "", cfg)
	if err != nil {
		b.Fatal(err)
	}
	t1 := time.Now()
	benchTurn(b, ctx, r.c, th.ThreadID, cfg, "hello")
	t2 := time.Now()
	benchTurn(b, ctx, r.c, th.ThreadID, cfg, "and again")
	t3 := time.Now()
	r.start, r.first = append(r.start, t1.Sub(t0)), append(r.first, t2.Sub(t1))
	r.newChat, r.followUp = append(r.newChat, t2.Sub(t0)), append(r.followUp, t3.Sub(t2))
}

func (r *chatRun) report(b *testing.B) {
	name := "none"
	if r.lanes {
		name = "lanes"
	}
	b.ReportMetric(medianMS(r.start), name+"-start-ms")
	b.ReportMetric(medianMS(r.first), name+"-first-turn-ms")
	b.ReportMetric(medianMS(r.newChat), name+"-new-chat-ms")
	b.ReportMetric(medianMS(r.followUp), name+"-follow-up-ms")
}

// startBenchClient starts the app-server as the daemon would: the
// offline provider without the harness's own sandbox mode and shell
// snapshot switch (the daemon sets neither), plus the lane profile when
// lanes are isolated. root holds the state directory it denies.
func startBenchClient(b testing.TB, m *codextest.Model, root string, lanes bool) *codex.Client {
	b.Helper()
	var args []string
	all := codextest.SandboxArgs(m.URL)
	for i := 0; i < len(all); i += 2 {
		if all[i+1] != "features.shell_snapshot=false" {
			args = append(args, all[i], all[i+1])
		}
	}
	home := filepath.Join(root, "codex-home")
	if lanes {
		args = append(args, codex.IsolationArgs(codex.CodexDir(codextest.CodexBinary(b)), true, []string{home, filepath.Join(root, "state")}, nil)...)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := codex.Start(ctx, codex.Options{Command: codextest.CodexBinary(b), Args: args, Home: home,
		Env: codextest.Env(), Dir: root, StartTimeout: 20 * time.Second, ClientName: "gatewayd-bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil && !errors.Is(err, codex.ErrClosed) {
			b.Error(err)
		}
	})
	return c
}

// benchLane makes lane i's directories, as the daemon does for a lane on
// a git project: a worktree with a .git and an AGENTS.md, and a temporary
// directory; it returns what the gateway sends for it.
func benchLane(b testing.TB, root string, i int, lanes bool) codex.ThreadConfig {
	b.Helper()
	dir := filepath.Join(root, "state", "lanes", strconv.Itoa(i))
	work, tmp := filepath.Join(dir, "work"), filepath.Join(dir, "tmp")
	for _, d := range []string{filepath.Join(work, ".git"), tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "AGENTS.md"), []byte("Answer briefly.\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg := codex.ThreadConfig{Cwd: work, ApprovalPolicy: "never", Sandbox: "workspace-write"}
	if lanes {
		cfg.Confine = codex.Confinement{Profile: codex.LaneProfile, Roots: []string{work, tmp},
			Env: map[string]string{"TMPDIR": tmp, "HOME": tmp}}
	}
	return cfg
}

func benchTurn(b *testing.B, ctx context.Context, c *codex.Client, th string, cfg codex.ThreadConfig, text string) {
	b.Helper()
	res, err := c.RunTurn(ctx, th, codex.TurnInput{Text: text, Confine: cfg.Confine}, codex.TurnEvents{})
	if err != nil || res.Status != codex.TurnCompleted {
		b.Fatalf("turn %q: %+v, %v", text, res, err)
	}
}

func medianMS(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}
