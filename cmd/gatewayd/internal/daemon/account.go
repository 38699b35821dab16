package daemon

import (
	"context"
	"errors"

	"go.uber.org/zap"
)

// checkAccount reads codex's account before the platforms start, so the
// first message already finds out whether codex can answer. A codex that
// cannot say (an older app-server) is taken as able to. An account/updated
// sent since the start is not lost either: bindCodex bound the gateway's
// handler before the app-server started.
func (d *daemon) checkAccount(ctx context.Context) {
	if err := d.gateway.Account().CheckAccount(ctx); err != nil {
		d.log.Warn("codex.account_read_failed", zap.Error(err))
	}
}

// healthProbe is /healthz: the watchdog probe plus whether codex can
// answer. A missing login is not part of the watchdog probe: systemd would
// restart the daemon over it in a loop, and the login would not come.
func (d *daemon) healthProbe(ctx context.Context) error {
	if err := d.probe(ctx); err != nil {
		return err
	}
	if reason := d.gateway.Account().CodexUnavailable(); reason != "" {
		return errors.New(reason)
	}
	return nil
}
