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

// toolsOf is the feature of list that lists codex's MCP servers and
// skills for the web console; nil when there is none (503 there).
func toolsOf(list []ext.Feature) webconsole.ToolSource {
	for _, f := range list {
		if t, ok := f.(webconsole.ToolSource); ok {
			return t
		}
	}
	return nil
}

// goalsOf is the feature of list that knows the lanes' goals for the web
// console; nil when there is none (503 there).
func goalsOf(list []ext.Feature) webconsole.GoalSource {
	for _, f := range list {
		if g, ok := f.(webconsole.GoalSource); ok {
			return g
		}
	}
	return nil
}

// accountLink is the daemon's link to the account feature: codex's
// account notifications, the console's login and whether codex can answer
// go to it, and a list of features without it leaves codex taken as able
// to answer. Its methods take a pointer so the handlers bound to codex
// read the link as it is when they run.
type accountLink struct {
	feature codexAccount // nil: the account feature is not in the list
}

// console is the account for the web console: nil, not a nil pointer in
// an interface, when there is none.
func (a *accountLink) console() webconsole.AccountControl {
	if a.feature == nil {
		return nil
	}
	return a.feature
}

// updated and loginCompleted hand codex's account notifications to the
// account feature, if there is one.
func (a *accountLink) updated(u codex.AccountUpdate) {
	if a.feature != nil {
		a.feature.AccountUpdated(u)
	}
}

func (a *accountLink) loginCompleted(r codex.LoginResult) {
	if a.feature != nil {
		a.feature.LoginCompleted(r)
	}
}

// check reads codex's account before the platforms start, so the first
// message already finds out whether codex can answer. A codex that cannot
// say (an older app-server) is taken as able to. An account/updated sent
// since the start is not lost either: bindCodex bound the gateway's
// handler before the app-server started.
func (a *accountLink) check(ctx context.Context, log *zap.Logger) {
	if a.feature == nil {
		return
	}
	if err := a.feature.CheckAccount(ctx); err != nil {
		log.Warn("codex.account_read_failed", zap.Error(err))
	}
}

// unavailable is why codex cannot answer (no login); nil when it can, or
// when there is no account feature to say.
func (a *accountLink) unavailable() error {
	if a.feature == nil {
		return nil
	}
	if reason := a.feature.CodexUnavailable(); reason != "" {
		return errors.New(reason)
	}
	return nil
}

// healthProbe is /healthz: the watchdog probe plus whether codex can
// answer. A missing login is not part of the watchdog probe: systemd would
// restart the daemon over it in a loop, and the login would not come.
func (d *daemon) healthProbe(ctx context.Context) error {
	if err := d.probe(ctx); err != nil {
		return err
	}
	return d.account.unavailable()
}
