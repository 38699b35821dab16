// Package lifecycle holds the daemon's supervision pieces that do not
// depend on the rest of gatewayd: the systemd notifier with its
// probe-gated watchdog, and the /healthz readiness state.
package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/zap"
)

// Probe reports whether the daemon is healthy (store and app-server answer).
type Probe func(ctx context.Context) error

// TickerFunc returns a channel ticking every d and its stop function. Tests
// pass a manual ticker so they do not sleep.
type TickerFunc func(d time.Duration) (<-chan time.Time, func())

// RealTicker is a time.Ticker.
func RealTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// NotifierConfig configures a Notifier. Zero values take the defaults noted.
type NotifierConfig struct {
	// Probe gates every WATCHDOG=1; nil means always healthy.
	Probe Probe
	// ProbeTimeout bounds one probe (default: half the interval).
	ProbeTimeout time.Duration
	// Interval between watchdog pings. 0 → half of $WATCHDOG_USEC when
	// systemd asked for a watchdog; no watchdog pings otherwise.
	Interval time.Duration
	// NewTicker defaults to RealTicker.
	NewTicker TickerFunc
	// Send delivers one state string; default is sd_notify through
	// $NOTIFY_SOCKET via go-systemd (a no-op when the variable is unset).
	Send   func(state string) error
	Logger *zap.Logger
}

// Notifier speaks the sd_notify protocol: READY=1 once, WATCHDOG=1 while
// the probe passes, STOPPING=1 on shutdown.
type Notifier struct {
	cfg NotifierConfig
	log *zap.Logger
}

// NewNotifier builds a Notifier.
func NewNotifier(cfg NotifierConfig) *Notifier {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Send == nil {
		cfg.Send = sdNotify
	}
	if cfg.NewTicker == nil {
		cfg.NewTicker = RealTicker
	}
	if cfg.Interval == 0 {
		cfg.Interval = WatchdogInterval()
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = cfg.Interval / 2
	}
	return &Notifier{cfg: cfg, log: cfg.Logger}
}

func sdNotify(state string) error {
	if _, err := daemon.SdNotify(false, state); err != nil {
		return fmt.Errorf("lifecycle: sd_notify %s: %w", state, err)
	}
	return nil
}

// WatchdogInterval is half of the watchdog timeout systemd set for this
// process, or 0 when there is none. Half leaves room for one late ping.
func WatchdogInterval() time.Duration {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil || d <= 0 {
		return 0
	}
	return d / 2
}

// Ready tells systemd start-up finished.
func (n *Notifier) Ready() { n.send(daemon.SdNotifyReady) }

// Stopping tells systemd the stop sequence started.
func (n *Notifier) Stopping() { n.send(daemon.SdNotifyStopping) }

// Status sets the free-form status line shown by systemctl status.
func (n *Notifier) Status(s string) { n.send("STATUS=" + s) }

func (n *Notifier) send(state string) {
	if err := n.cfg.Send(state); err != nil {
		n.log.Warn("sdnotify.failed", zap.String("state", state), zap.Error(err))
	}
}

// Watchdog pings WATCHDOG=1 every interval while the probe passes, until
// ctx ends. A failing probe skips the ping, so systemd restarts a daemon
// that stays unhealthy for the whole WatchdogSec. Without an interval it
// returns at once.
func (n *Notifier) Watchdog(ctx context.Context) {
	if n.cfg.Interval <= 0 {
		return
	}
	tick, stop := n.cfg.NewTicker(n.cfg.Interval)
	defer stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		err := n.probe(ctx)
		switch {
		case err != nil:
			if !failing {
				n.log.Warn("watchdog.probe_failed", zap.Error(err))
			}
			failing = true
		default:
			if failing {
				n.log.Info("watchdog.probe_recovered")
			}
			failing = false
			n.send(daemon.SdNotifyWatchdog)
		}
	}
}

func (n *Notifier) probe(ctx context.Context) error {
	if n.cfg.Probe == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ProbeTimeout)
	defer cancel()
	return n.cfg.Probe(ctx)
}
