package loadgen

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		_ = os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// TestKnownLanes starts gatewayd on an empty database and on one with
// -known lanes (each bound to a thread), -active of them active within the
// last hour, and logs the start-up time (exec to READY=1) and RSS of both,
// and the RSS each known lane adds.
func TestKnownLanes(t *testing.T) {
	if !*load {
		t.Skip("pass -load to run it (make bench does)")
	}
	buildGateway(t) // not part of any start-up
	for run := 1; run <= 3; run++ {
		empty := startupWith(t, 0, 0)
		full := startupWith(t, *known, *active)
		t.Logf("loadgen: run %d: start-up with 0 lanes: ready in %v, rss %.1f MB", run, empty.ready.Round(time.Millisecond), mb(empty.rss))
		t.Logf("loadgen: run %d: start-up with %d lanes (%d active): ready in %v, rss %.1f MB, %.2f KB per known lane",
			run, *known, *active, full.ready.Round(time.Millisecond), mb(full.rss),
			float64(full.rss-empty.rss)/1024/float64(max(1, *known)))
	}
}

type startup struct {
	ready time.Duration
	rss   int64
}

func startupWith(t *testing.T, lanes, recent int) startup {
	dir := t.TempDir()
	if lanes > 0 {
		populate(t, filepath.Join(dir, "state", "gatewayd.db"), lanes, recent)
	}
	notify := listenNotify(t)
	tg, model := telegramtest.New(t), codextest.NewModel(t)
	start := time.Now()
	d := startGateway(t, tg, model, options{lanes: 1, logLevel: "info", env: []string{"NOTIFY_SOCKET=" + notify.path}}, dir)
	notify.waitReady(t, 2*time.Minute)
	ready := time.Since(start)
	u, err := Measure(d.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return startup{ready: ready, rss: u.GatewayRSS}
}

// populate writes lanes Telegram private-chat lanes, each bound to a
// thread; the first recent were active a minute ago, the rest two days ago.
func populate(t *testing.T, path string, lanes, recent int) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, part := range []struct {
		from, to int
		at       time.Time
	}{{0, recent, time.Now().Add(-time.Minute)}, {recent, lanes, time.Now().Add(-48 * time.Hour)}} {
		at := part.at
		st, err := store.Open(ctx, path, store.Options{Logger: zap.NewNop(), Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for w := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := part.from + w; i < part.to; i += 64 {
					if err := knownLane(ctx, st, i); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		for err := range errs {
			t.Fatal(err)
		}
	}
}

func knownLane(ctx context.Context, st *store.Store, i int) error {
	chat := strconv.Itoa(20_000_000 + i)
	addr := gateway.Address{Platform: "telegram", Kind: gateway.LaneDM, ChatID: chat, UserID: chat}
	l, err := st.EnsureLane(ctx, store.LaneKey{SessionKey: addr.SessionKey(), Platform: addr.Platform,
		Kind: string(addr.Kind), ChatID: addr.ChatID, UserID: addr.UserID})
	if err != nil {
		return err
	}
	return st.BindThread(ctx, l.SessionKey, l.Generation, fmt.Sprintf("019ea688-7067-7461-a6a6-%012d", i))
}

// notifyListener is a systemd notify socket: gatewayd sends READY=1 there.
type notifyListener struct {
	path  string
	ready chan struct{}
}

func listenNotify(t *testing.T) *notifyListener {
	n := &notifyListener{path: filepath.Join(t.TempDir(), "notify.sock"), ready: make(chan struct{})}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		var once sync.Once
		buf := make([]byte, 4096)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				return
			}
			if strings.Contains(string(buf[:k]), "READY=1") {
				once.Do(func() { close(n.ready) })
			}
		}
	}()
	return n
}

func (n *notifyListener) waitReady(t *testing.T, limit time.Duration) {
	select {
	case <-n.ready:
	case <-time.After(limit):
		t.Fatalf("no READY=1 in %v", limit)
	}
}
