package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// The account check: a codex that has no account and needs an OpenAI login
// cannot answer (its turns retry "Reconnecting… n/5" for minutes), so the
// gateway answers at once instead of starting turns.
//
// A message refused this way is closed (inbox state failed), not kept to
// run after a login: it is answered with the reason right away, a login
// may come hours later, and a burst of old requests then running by
// themselves would surprise more than a resend. The cut-off journal of a
// refused /retry stays, so /retry works again after the login.

// AccountMissingReason is what a lane, /healthz and the log say while codex
// has no account and its provider needs an OpenAI login.
const AccountMissingReason = "Codex is not logged in: run `codex login --device-auth` as the service user " +
	"(or send /login in a private chat with the bot), or configure a model provider in CODEX_HOME/config.toml"

// accountCallTimeout bounds account/read and account/login/start; both run
// on a platform's delivery goroutine or at start-up.
const accountCallTimeout = 15 * time.Second

// accountState is whether codex can answer, and the logins started from
// chats that wait for account/login/completed.
type accountState struct {
	mu     sync.Mutex
	reason string                 // "" while codex can answer
	logins map[string]loginWaiter // by login id
}

// loginWaiter is the chat that asked for a login.
type loginWaiter struct {
	addr    Address
	msgID   string
	started time.Time
}

// Bounds of the logins kept waiting for account/login/completed: codex may
// never send it (an app-server restart forgets the login), so a waiter is
// dropped once it is older than any device code lives (15 minutes), and at
// most maxPendingLogins are kept, the newest, whatever chats keep asking.
const (
	loginWaitLimit   = 30 * time.Minute
	maxPendingLogins = 16
)

// remember keeps w waiting for login id, dropping waiters past
// loginWaitLimit and, beyond maxPendingLogins, the oldest.
func (a *accountState) remember(id string, w loginWaiter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.logins == nil {
		a.logins = make(map[string]loginWaiter)
	}
	for old, ow := range a.logins {
		if w.started.Sub(ow.started) > loginWaitLimit {
			delete(a.logins, old)
		}
	}
	for len(a.logins) >= maxPendingLogins {
		oldest := ""
		for old, ow := range a.logins {
			if oldest == "" || ow.started.Before(a.logins[oldest].started) {
				oldest = old
			}
		}
		delete(a.logins, oldest)
	}
	a.logins[id] = w
}

// CodexUnavailable returns why codex cannot answer ("" when it can), for
// /healthz.
func (g *Gateway) CodexUnavailable() string {
	g.account.mu.Lock()
	defer g.account.mu.Unlock()
	return g.account.reason
}

// CheckAccount reads codex's account and sets whether lanes' turns run. The
// daemon calls it at start and on account/updated. The first time the
// account is found missing, one error event names the fix.
func (g *Gateway) CheckAccount(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, accountCallTimeout)
	defer cancel()
	a, err := g.cx.Account(ctx)
	if err != nil {
		return fmt.Errorf("gateway: read codex account: %w", err)
	}
	reason := ""
	if !a.Usable() {
		reason = AccountMissingReason
	}
	g.account.mu.Lock()
	was := g.account.reason
	g.account.reason = reason
	g.account.mu.Unlock()
	switch {
	case reason != "" && was == "":
		g.log.Error("codex.account_missing", zap.String("fix",
			"run `codex login --device-auth` as the service user (or /login in a private chat), or configure a model provider in CODEX_HOME/config.toml"))
	case reason == "" && was != "":
		g.log.Info("codex.account_ready", zap.String("type", a.Type), zap.String("plan", a.PlanType))
	}
	return nil
}

// AccountUpdated is the handler of codex's account/updated: the account is
// read again (the notification carries no requiresOpenaiAuth).
func (g *Gateway) AccountUpdated(u codex.AccountUpdate) {
	g.log.Info("codex.account_updated", zap.String("auth_mode", u.AuthMode), zap.String("plan", u.PlanType))
	// Not g.baseCtx: Run sets it, and codex may call this while Run starts.
	if err := g.CheckAccount(context.Background()); err != nil {
		g.log.Warn("codex.account_read_failed", zap.Error(err))
	}
}

// refuseUnavailable answers a queued item with the reason codex cannot
// answer and closes its inbox row, instead of starting it. It reports
// whether the item was refused.
func (g *Gateway) refuseUnavailable(ctx context.Context, l *lane, it item) bool {
	reason := g.CodexUnavailable()
	if reason == "" {
		return false
	}
	g.log.Info("turn.refused_unavailable", zap.String("lane", l.key), zap.Int64("inbound", it.inboundID))
	g.sched.dropInboundJournal(l, it)
	g.inbox.set(ctx, it.inboundID, store.InboundFailed)
	g.out.notify(ctx, l.addr, replyTarget(it), reason)
	return true
}

// loginCommand runs /login: a ChatGPT device-code login whose URL and code
// go to this chat. Only a private chat or the API lane may ask: whoever
// reads the code can sign this server in to their account.
func (g *Gateway) loginCommand(ctx context.Context, l *lane, msgID string) {
	g.out.notify(ctx, l.addr, msgID, g.startLogin(ctx, l.addr, msgID))
}

func (g *Gateway) startLogin(ctx context.Context, addr Address, msgID string) string {
	if addr.Kind != LaneDM && addr.Kind != LaneAPI {
		return "/login works only in a private chat with the bot or on the API lane: whoever sees the login code can sign this server in."
	}
	if done := g.alreadyLoggedIn(ctx); done != "" {
		return done
	}
	ctx, cancel := context.WithTimeout(ctx, accountCallTimeout)
	defer cancel()
	login, err := g.cx.StartLogin(ctx)
	if err != nil {
		g.log.Warn("codex.login_start_failed", zap.Error(err))
		return "Could not start the Codex login: " + brief(codex.RPCMessage(err))
	}
	g.account.remember(login.ID, loginWaiter{addr: addr, msgID: msgID, started: g.now()})
	g.log.Info("codex.login_started", zap.String("lane", addr.SessionKey()), zap.String("login_id", login.ID))
	return fmt.Sprintf("To log Codex in, open %s and enter the code %s. I'll tell you here when it is done.",
		login.VerificationURL, login.UserCode)
}

// alreadyLoggedIn returns a reply when a login is pointless: codex has an
// account, or its provider needs none. An unreadable account is no reason
// to refuse.
func (g *Gateway) alreadyLoggedIn(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, accountCallTimeout)
	defer cancel()
	a, err := g.cx.Account(ctx)
	switch {
	case err != nil:
		return ""
	case a.Type != "":
		return "Codex is already logged in (" + accountName(a) + ")."
	case !a.RequiresOpenAIAuth:
		return "Codex uses a configured model provider that needs no login."
	}
	return ""
}

func accountName(a codex.Account) string {
	if a.Email != "" {
		return a.Type + ", " + a.Email
	}
	return a.Type
}

// LoginCompleted is the handler of codex's account/login/completed: the
// chat that started the login is told how it ended. A login started
// elsewhere (the codex CLI) has no chat to tell.
func (g *Gateway) LoginCompleted(r codex.LoginResult) {
	g.account.mu.Lock()
	w, ok := g.account.logins[r.LoginID]
	delete(g.account.logins, r.LoginID)
	g.account.mu.Unlock()
	g.log.Info("codex.login_completed", zap.String("login_id", r.LoginID), zap.Bool("success", r.Success),
		zap.Bool("asked_here", ok))
	if r.Success {
		// account/updated follows too; reading now lets the next message run
		// without waiting for it.
		if err := g.CheckAccount(context.Background()); err != nil {
			g.log.Warn("codex.account_read_failed", zap.Error(err))
		}
	}
	if !ok {
		return
	}
	text := "Codex is logged in; messages run again."
	if !r.Success {
		text = "The Codex login failed"
		if r.Error != "" {
			text += ": " + brief(r.Error)
		}
		text += ". Send /login to try again."
	}
	g.out.notify(context.Background(), w.addr, w.msgID, text)
}

// accountModule registers /login.
func accountModule(g *Gateway) module {
	return moduleFunc(func(h *host) {
		h.hooks.refuse = append(h.hooks.refuse, g.refuseUnavailable)
		h.command("login", func(ctx context.Context, c commandCall) bool {
			g.loginCommand(ctx, c.lane, c.msgID)
			return true
		})
	})
}
