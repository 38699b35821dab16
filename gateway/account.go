package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// The account check: a codex that has no account and needs an OpenAI login
// cannot answer (its turns retry "Reconnecting… n/5" for minutes), so the
// gateway answers at once instead of starting turns.
//
// A message refused this way is closed (inbox state failed), not kept to
// run after a login: it is answered with the reason right away, a login
// may come hours later, and a burst of old requests then running by
// themselves would surprise more than a resend. The turn to retry of a
// refused /retry stays, so /retry works again after the login.

// AccountMissingReason is what a lane, /healthz and the log say while codex
// has no account and its provider needs an OpenAI login.
const AccountMissingReason = "Codex is not logged in: run `codex login --device-auth` as the service user " +
	"(or send /login in a private chat with the bot), or configure a model provider in CODEX_HOME/config.toml"

// accountMissingReason is AccountMissingReason naming login as the codex
// command to run.
func accountMissingReason(login string) string {
	if login == "" || login == "codex" {
		return AccountMissingReason
	}
	return strings.Replace(AccountMissingReason, "`codex login", "`"+login+" login", 1)
}

// accountCallTimeout bounds account/read and account/login/start; both run
// on a platform's delivery goroutine or at start-up.
const accountCallTimeout = 15 * time.Second

// accountState is whether codex can answer, and the logins started from
// chats that wait for account/login/completed.
type accountState struct {
	mu     sync.Mutex
	reason string                 // "" while codex can answer
	logins map[string]loginWaiter // by login id
	// console is the web console's last login (StartDeviceLogin) and how
	// it ended, for LoginOutcome.
	console        string
	consoleDone    bool
	consoleFailure string
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

// Account is /login and whether codex can answer: it reads codex's
// account (at start and on account/updated), refuses queued work while
// there is none, and tells the chat that started a device-code login how
// it ended. The daemon reaches it through Gateway.Account to wire codex's
// account notifications and /healthz.
type Account struct {
	cx      accountRuntime
	refuse  refusals
	out     *deliverer
	log     *zap.Logger
	now     func() time.Time
	missing string // the reason lanes hear while codex has no account
	state   accountState
}

func newAccount(cx accountRuntime, j journal, rs refusalStore, out *deliverer, in inbox, log *zap.Logger, now func() time.Time, login string) *Account {
	return &Account{cx: cx, refuse: refusals{journal: j, st: rs, inbox: in, out: out, log: log}, out: out, log: log, now: now,
		missing: accountMissingReason(login)}
}

// CodexUnavailable returns why codex cannot answer ("" when it can), for
// /healthz.
func (a *Account) CodexUnavailable() string {
	a.state.mu.Lock()
	defer a.state.mu.Unlock()
	return a.state.reason
}

// CheckAccount reads codex's account and sets whether lanes' turns run. The
// daemon calls it at start and on account/updated. The first time the
// account is found missing, one error event names the fix.
func (a *Account) CheckAccount(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, accountCallTimeout)
	defer cancel()
	acc, err := a.cx.Account(ctx)
	if err != nil {
		return fmt.Errorf("gateway: read codex account: %w", err)
	}
	reason := ""
	if !acc.Usable() {
		reason = a.missing
	}
	a.state.mu.Lock()
	was := a.state.reason
	a.state.reason = reason
	a.state.mu.Unlock()
	switch {
	case reason != "" && was == "":
		a.log.Error("codex.account_missing", zap.String("fix", strings.TrimPrefix(a.missing, "Codex is not logged in: ")))
	case reason == "" && was != "":
		a.log.Info("codex.account_ready", zap.String("type", acc.Type), zap.String("plan", acc.PlanType))
	}
	return nil
}

// AccountUpdated is the handler of codex's account/updated: the account is
// read again (the notification carries no requiresOpenaiAuth).
func (a *Account) AccountUpdated(u codex.AccountUpdate) {
	a.log.Info("codex.account_updated", zap.String("auth_mode", u.AuthMode), zap.String("plan", u.PlanType))
	// A context of its own: codex calls this outside any turn, and also
	// before Run starts.
	if err := a.CheckAccount(context.Background()); err != nil {
		a.log.Warn("codex.account_read_failed", zap.Error(err))
	}
}

// refuseUnavailable answers a queued item with the reason codex cannot
// answer and closes its inbox row, instead of starting it. It reports
// whether the item was refused.
func (a *Account) refuseUnavailable(ctx context.Context, l *lane, it item) bool {
	reason := a.CodexUnavailable()
	if reason == "" {
		return false
	}
	a.log.Info("turn.refused_unavailable", zap.String("lane", l.key), zap.Int64("inbound", it.inboundID))
	a.refuse.refuse(ctx, l, it, reason)
	return true
}

// loginCommand runs /login: a ChatGPT device-code login whose URL and code
// go to this chat. Only a private chat or the API lane may ask: whoever
// reads the code can sign this server in to their account.
func (a *Account) loginCommand(ctx context.Context, l *lane, msgID string) {
	a.out.Notify(ctx, l.addr, msgID, a.startLogin(ctx, l.addr, msgID))
}

func (a *Account) startLogin(ctx context.Context, addr Address, msgID string) string {
	if addr.Kind != LaneDM && addr.Kind != LaneAPI {
		return "/login works only in a private chat with the bot or on the API lane: whoever sees the login code can sign this server in."
	}
	if done := a.alreadyLoggedIn(ctx); done != "" {
		return done
	}
	ctx, cancel := context.WithTimeout(ctx, accountCallTimeout)
	defer cancel()
	login, err := a.cx.StartLogin(ctx)
	if err != nil {
		a.log.Warn("codex.login_start_failed", zap.Error(err))
		return "Could not start the Codex login: " + brief(codex.RPCMessage(err))
	}
	a.state.remember(login.ID, loginWaiter{addr: addr, msgID: msgID, started: a.now()})
	a.log.Info("codex.login_started", zap.String("lane", addr.SessionKey()), zap.String("login_id", login.ID))
	return fmt.Sprintf("To log Codex in, open %s and enter the code %s. I'll tell you here when it is done.",
		login.VerificationURL, login.UserCode)
}

// StartDeviceLogin starts a device-code login for the web console, which
// shows the URL and code itself and learns the end by reading the account
// again (no chat waits for account/login/completed). When a login is
// pointless it starts none and returns why as note.
func (a *Account) StartDeviceLogin(ctx context.Context) (login codex.Login, note string, err error) {
	if done := a.alreadyLoggedIn(ctx); done != "" {
		return codex.Login{}, done, nil
	}
	ctx, cancel := context.WithTimeout(ctx, accountCallTimeout)
	defer cancel()
	login, err = a.cx.StartLogin(ctx)
	if err != nil {
		a.log.Warn("codex.login_start_failed", zap.Error(err))
		return codex.Login{}, "", fmt.Errorf("could not start the Codex login: %s", brief(codex.RPCMessage(err)))
	}
	a.state.mu.Lock()
	a.state.console, a.state.consoleDone, a.state.consoleFailure = login.ID, false, ""
	a.state.mu.Unlock()
	a.log.Info("codex.login_started", zap.String("lane", "console"), zap.String("login_id", login.ID))
	return login, "", nil
}

// LoginAPIKey logs codex in with an OpenAI API key, for the web console
// (a chat never carries a key: a message is stored and seen by others).
// The account is read again at once, so the next message runs without
// waiting for account/updated. The key appears in no log and no error.
func (a *Account) LoginAPIKey(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, accountCallTimeout)
	defer cancel()
	if err := a.cx.LoginAPIKey(ctx, key); err != nil {
		msg := brief(codex.RPCMessage(err))
		if key != "" {
			msg = strings.ReplaceAll(msg, key, "[the key]")
		}
		a.log.Warn("codex.login_api_key_failed", zap.String("reason", msg))
		return fmt.Errorf("could not log Codex in with the API key: %s", msg)
	}
	a.log.Info("codex.login_api_key")
	if err := a.CheckAccount(ctx); err != nil {
		a.log.Warn("codex.account_read_failed", zap.Error(err))
	}
	return nil
}

// LoginOutcome says whether the console's login id has ended (codex sent
// account/login/completed) and, if it failed, why.
func (a *Account) LoginOutcome(id string) (done bool, failure string) {
	a.state.mu.Lock()
	defer a.state.mu.Unlock()
	if id == "" || id != a.state.console {
		return false, ""
	}
	return a.state.consoleDone, a.state.consoleFailure
}

// alreadyLoggedIn returns a reply when a login is pointless: codex has an
// account, or its provider needs none. An unreadable account is no reason
// to refuse.
func (a *Account) alreadyLoggedIn(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, accountCallTimeout)
	defer cancel()
	acc, err := a.cx.Account(ctx)
	switch {
	case err != nil:
		return ""
	case acc.Type != "":
		return "Codex is already logged in (" + accountName(acc) + ")."
	case !acc.RequiresOpenAIAuth:
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
func (a *Account) LoginCompleted(r codex.LoginResult) {
	a.state.mu.Lock()
	w, ok := a.state.logins[r.LoginID]
	delete(a.state.logins, r.LoginID)
	if r.LoginID != "" && r.LoginID == a.state.console {
		a.state.consoleDone, a.state.consoleFailure = true, ""
		if !r.Success {
			a.state.consoleFailure = "the Codex login failed"
			if r.Error != "" {
				a.state.consoleFailure += ": " + brief(r.Error)
			}
		}
	}
	a.state.mu.Unlock()
	a.log.Info("codex.login_completed", zap.String("login_id", r.LoginID), zap.Bool("success", r.Success),
		zap.Bool("asked_here", ok))
	if r.Success {
		// account/updated follows too; reading now lets the next message run
		// without waiting for it.
		if err := a.CheckAccount(context.Background()); err != nil {
			a.log.Warn("codex.account_read_failed", zap.Error(err))
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
	a.out.Notify(context.Background(), w.addr, w.msgID, text)
}

// register adds /login and the refusal of queued work while codex cannot
// answer.
func (a *Account) register(h *host) {
	h.hooks.refuse = append(h.hooks.refuse, a.refuseUnavailable)
	h.command("login", func(ctx context.Context, c commandCall) bool {
		a.loginCommand(ctx, c.lane, c.msgID)
		return true
	})
}
