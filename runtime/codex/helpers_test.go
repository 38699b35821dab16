package codex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// fakeClient is a Client driving the fake app-server, plus where the fake
// records what it received.
type fakeClient struct {
	*Client
	logPath string
}

type fakeConfig struct {
	mode   string // fakeModeEnv
	tweak  func(*Options)
	noLogs bool // benchmarks: no zaptest logger
}

func startFake(t testing.TB, cfg fakeConfig) *fakeClient {
	t.Helper()
	opts, logPath := fakeOptions(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &fakeClient{Client: c, logPath: logPath}
}

func fakeOptions(t testing.TB, cfg fakeConfig) (Options, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("os.Executable: %v", err)
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "fake.log")
	opts := Options{
		Command:        self,
		Home:           dir,
		Env:            []string{fakeEnv + "=1", fakeLogEnv + "=" + logPath, fakeModeEnv + "=" + cfg.mode},
		StartTimeout:   5 * time.Second,
		RestartBackoff: time.Millisecond,
	}
	if !cfg.noLogs {
		opts.Logger = zaptest.NewLogger(t)
	}
	if cfg.tweak != nil {
		cfg.tweak(&opts)
	}
	return opts, logPath
}

// received returns the methods the fake has received so far, in order.
func (fc *fakeClient) received(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(fc.logPath)
	if err != nil {
		t.Fatalf("read fake log: %v", err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "response ", "response:"))
}

func count(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newThread starts a thread on the fake.
func (fc *fakeClient) newThread(t testing.TB) string {
	t.Helper()
	ens, err := fc.EnsureThread(testCtx(t), "", ThreadConfig{})
	if err != nil {
		t.Fatalf("EnsureThread: %v", err)
	}
	return ens.ThreadID
}

// waitRestart waits for the current process to die and its successor to be
// installed, using the connection's own signals.
func (fc *fakeClient) waitRestart(t testing.TB, cn *conn) {
	t.Helper()
	select {
	case <-cn.replaced:
	case <-testCtx(t).Done():
		t.Fatal("no restart")
	}
}

func (fc *fakeClient) conn(t testing.TB) *conn {
	t.Helper()
	cn, err := fc.current()
	if err != nil {
		t.Fatalf("current: %v", err)
	}
	return cn
}

// The shared fake serves the tests that neither kill, close nor reconfigure
// their process: under -race every spawn of the (race-built) test binary
// costs over a second. Each test uses its own threads; approval handlers
// are registered per thread.
var shared struct {
	once      sync.Once
	fc        *fakeClient
	err       error
	dir       string
	approvals sync.Map // thread id → ApprovalHandler
	refused   sync.Map // thread id → UnsupportedHandler
}

func sharedFake(t testing.TB) *fakeClient {
	t.Helper()
	shared.once.Do(func() {
		self, err := os.Executable()
		if err != nil {
			shared.err = err
			return
		}
		if shared.dir, err = os.MkdirTemp("", "codex-fake-"); err != nil {
			shared.err = err
			return
		}
		logPath := filepath.Join(shared.dir, "fake.log")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := Start(ctx, Options{
			Command: self,
			Home:    shared.dir,
			Env:     []string{fakeEnv + "=1", fakeLogEnv + "=" + logPath, fakeModeEnv + "=garbage"},
			Approvals: func(ctx context.Context, req ApprovalRequest) Decision {
				if h, ok := shared.approvals.Load(req.ThreadID); ok {
					return h.(ApprovalHandler)(ctx, req)
				}
				return DecisionDecline
			},
			Unsupported: func(threadID, method string) {
				if h, ok := shared.refused.Load(threadID); ok {
					h.(UnsupportedHandler)(threadID, method)
				}
			},
		})
		shared.fc, shared.err = &fakeClient{Client: c, logPath: logPath}, err
	})
	if shared.err != nil {
		t.Fatalf("shared fake: %v", shared.err)
	}
	return shared.fc
}

// closeShared runs after all tests (TestMain).
func closeShared() {
	if shared.fc != nil && shared.fc.Client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shared.fc.Close(ctx)
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
}

// fake sends one of the fake's own requests (fake/hold, fake/release, …).
func (fc *fakeClient) fake(t testing.TB, method string, params map[string]any) {
	t.Helper()
	if err := fc.conn(t).call(testCtx(t), method, params, nil); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// doneProbe is a context that reports when the code under test first asks
// for Done, i.e. is about to block on it.
type doneProbe struct {
	context.Context
	once  sync.Once
	asked chan struct{}
}

func newDoneProbe(ctx context.Context) *doneProbe {
	return &doneProbe{Context: ctx, asked: make(chan struct{})}
}

func (p *doneProbe) Done() <-chan struct{} {
	p.once.Do(func() { close(p.asked) })
	return p.Context.Done()
}

// waitFreed waits until the thread no longer runs sub.
func waitFreed(t testing.TB, sub *turnSub) {
	t.Helper()
	select {
	case <-sub.freed:
	case <-testCtx(t).Done():
		t.Fatal("the thread was never freed")
	}
}
