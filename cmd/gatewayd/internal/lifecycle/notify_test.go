package lifecycle

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// notifySocket listens on a unixgram socket and points NOTIFY_SOCKET at it.
func notifySocket(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return conn
}

func readState(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 512)
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("reading notify socket: %v", err)
	}
	return string(buf[:n])
}

// manualTicker is a ticker the test drives.
type manualTicker struct {
	c       chan time.Time
	stopped atomic.Bool
}

func (m *manualTicker) fn(time.Duration) (<-chan time.Time, func()) {
	return m.c, func() { m.stopped.Store(true) }
}

func TestNotifierOrderAndProbeGatedWatchdog(t *testing.T) {
	conn := notifySocket(t)
	var healthy atomic.Bool
	healthy.Store(true)
	probed := make(chan bool)
	ticker := &manualTicker{c: make(chan time.Time)}
	n := NewNotifier(NotifierConfig{
		Interval:  time.Second,
		NewTicker: ticker.fn,
		Probe: func(ctx context.Context) error {
			ok := healthy.Load()
			defer func() { probed <- ok }()
			if !ok {
				return errors.New("store ping failed")
			}
			return nil
		},
	})

	n.Ready()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Watchdog(ctx); close(done) }()

	tick := func(wantHealthy bool) {
		t.Helper()
		ticker.c <- time.Now()
		if got := <-probed; got != wantHealthy {
			t.Fatalf("probe ran with healthy=%v, want %v", got, wantHealthy)
		}
	}
	tick(true)
	tick(true)
	healthy.Store(false)
	tick(false)
	tick(false)
	healthy.Store(true)
	tick(true)
	cancel()
	<-done
	n.Stopping()

	// Datagrams are ordered: every WATCHDOG sent while failing would show
	// up here before STOPPING.
	want := []string{"READY=1", "WATCHDOG=1", "WATCHDOG=1", "WATCHDOG=1", "STOPPING=1"}
	for i, w := range want {
		if got := readState(t, conn); got != w {
			t.Fatalf("datagram %d = %q, want %q (sequence %q)", i, got, w, want)
		}
	}
	if !ticker.stopped.Load() {
		t.Error("watchdog ticker was not stopped")
	}
}

func TestWatchdogDisabledWithoutInterval(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	t.Setenv("WATCHDOG_PID", "")
	n := NewNotifier(NotifierConfig{NewTicker: func(time.Duration) (<-chan time.Time, func()) {
		t.Error("a ticker was started without a watchdog interval")
		return nil, func() {}
	}})
	n.Watchdog(context.Background()) // must return at once
}

func TestWatchdogIntervalIsHalfOfSystemd(t *testing.T) {
	tests := []struct {
		name, usec, pid string
		want            time.Duration
	}{
		{"set for us", "10000000", strconv.Itoa(os.Getpid()), 5 * time.Second},
		{"no pid", "10000000", "", 5 * time.Second},
		{"for another process", "10000000", "1", 0},
		{"unset", "", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("WATCHDOG_USEC", tc.usec)
			t.Setenv("WATCHDOG_PID", tc.pid)
			if got := WatchdogInterval(); got != tc.want {
				t.Errorf("WatchdogInterval = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSendWithoutSocketIsSilent(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	// Outside systemd every state is a silent no-op, not an error.
	if err := sdNotify("READY=1"); err != nil {
		t.Errorf("sd_notify without NOTIFY_SOCKET: %v", err)
	}
}
