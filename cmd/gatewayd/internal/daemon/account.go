package daemon

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/webconsole"
)

// codexAccount is what the daemon uses of the account feature: whether
// codex can answer (/healthz), codex's account notifications, and the web
// console's login. The daemon finds it in the list of features, so a list
// without it leaves codex taken as able to answer.
type codexAccount interface {
	webconsole.AccountControl
	CheckAccount(ctx context.Context) error
	AccountUpdated(u codex.AccountUpdate)
	LoginCompleted(r codex.LoginResult)
}

// accountOf is the feature of list that is the account check; nil when
// there is none.
func accountOf(list []ext.Feature) codexAccount {
	for _, f := range list {
		if a, ok := f.(codexAccount); ok {
			return a
		}
	}
	return nil
}

// modelsOf is the feature of list that lists codex's models for the web
// console; nil when there is none (the console then lists none).
func modelsOf(list []ext.Feature) webconsole.ModelSource {
	for _, f := range list {
		if m, ok := f.(webconsole.ModelSource); ok {
			return m
		}
	}
	return nil
}

// consoleAccount is the account for the web console: nil, not a nil
// pointer in an interface, when there is none.
func (d *daemon) consoleAccount() webconsole.AccountControl {
	if d.account == nil {
		return nil
	}
	return d.account
}

// accountUpdated and loginCompleted hand codex's account notifications to
// the account feature, if there is one.
func (d *daemon) accountUpdated(u codex.AccountUpdate) {
	if d.account != nil {
		d.account.AccountUpdated(u)
	}
}

func (d *daemon) loginCompleted(r codex.LoginResult) {
	if d.account != nil {
		d.account.LoginCompleted(r)
	}
}

// checkAccount reads codex's account before the platforms start, so the
// first message already finds out whether codex can answer. A codex that
// cannot say (an older app-server) is taken as able to. An account/updated
// sent since the start is not lost either: bindCodex bound the gateway's
// handler before the app-server started.
func (d *daemon) checkAccount(ctx context.Context) {
	if d.account == nil {
		return
	}
	if err := d.account.CheckAccount(ctx); err != nil {
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
	if d.account == nil {
		return nil
	}
	if reason := d.account.CodexUnavailable(); reason != "" {
		return errors.New(reason)
	}
	return nil
}
