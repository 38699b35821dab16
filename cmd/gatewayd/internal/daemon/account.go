package daemon

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// The codex client starts before the gateway exists, so its account hooks
// reach the gateway through d.accountGW, bound once it is built. An
// account/updated before that is not lost: checkAccount reads the account
// after binding.

func (d *daemon) accountUpdated(u codex.AccountUpdate) {
	if gw := d.accountGW.Load(); gw != nil {
		gw.Account().AccountUpdated(u)
	}
}

func (d *daemon) loginCompleted(r codex.LoginResult) {
	if gw := d.accountGW.Load(); gw != nil {
		gw.Account().LoginCompleted(r)
	}
}

// checkAccount reads codex's account before the platforms start, so the
// first message already finds out whether codex can answer. A codex that
// cannot say (an older app-server) is taken as able to.
func (d *daemon) checkAccount(ctx context.Context, gw *gateway.Gateway) {
	d.accountGW.Store(gw)
	if err := gw.Account().CheckAccount(ctx); err != nil {
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
