package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/feature/account"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// accountCodex is the fake codex with the account calls of *codex.Client.
type accountCodex struct {
	*fakeCodex
	amu      sync.Mutex
	account  codex.Account
	readErr  error
	login    codex.Login
	loginErr error
	logins   int
	keyErr   error    // LoginAPIKey's answer
	keys     []string // the API keys logged in with
}

// LoginAPIKey makes the account an API key's, as codex does, unless keyErr.
func (c *accountCodex) LoginAPIKey(_ context.Context, key string) error {
	c.amu.Lock()
	defer c.amu.Unlock()
	if c.keyErr != nil {
		return c.keyErr
	}
	c.keys = append(c.keys, key)
	c.account = codex.Account{Type: "apiKey", RequiresOpenAIAuth: true}
	return nil
}

func (c *accountCodex) Account(context.Context) (codex.Account, error) {
	c.amu.Lock()
	defer c.amu.Unlock()
	return c.account, c.readErr
}

func (c *accountCodex) StartLogin(context.Context) (codex.Login, error) {
	c.amu.Lock()
	defer c.amu.Unlock()
	c.logins++
	return c.login, c.loginErr
}

func (c *accountCodex) setAccount(a codex.Account) {
	c.amu.Lock()
	c.account = a
	c.amu.Unlock()
}

var (
	noAccount = codex.Account{RequiresOpenAIAuth: true}
	chatgpt   = codex.Account{Type: "chatgpt", Email: "me@example.com", PlanType: "plus", RequiresOpenAIAuth: true}
)

// newAccountHarness is a harness with the account feature (returned as
// acc), whose codex answers account calls, and whose log is observed.
// before runs on the store before the gateway starts (a crash's leftovers).
func newAccountHarness(t *testing.T, a codex.Account, before ...func(*fakeStore)) (
	h *harness, ac *accountCodex, acc *account.Account, logs *observer.ObservedLogs) {
	t.Helper()
	h = &harness{st: newFakeStore(), cx: newFakeCodex(), p: newFakePlatform(), clock: newFakeClock()}
	h.st.now = h.clock.Now
	ac = &accountCodex{fakeCodex: h.cx, account: a,
		login: codex.Login{ID: "login-7", VerificationURL: "https://auth.example/codex/device", UserCode: "WXYZ-9876"}}
	acc = account.New("", ac)
	core, logs := observer.New(zap.InfoLevel)
	g, err := New(Config{MaxLive: 16, QueueLimit: 10, MaxConcurrentTurns: 4, DrainTimeout: 2 * time.Second,
		Logger: zap.New(core), Now: h.clock.Now, Features: []ext.Feature{acc}}.WithDefaults(), h.st, ac)
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(h.p)
	h.g = g
	if err := acc.CheckAccount(context.Background()); err != nil {
		t.Fatalf("CheckAccount: %v", err)
	}
	for _, f := range before {
		f(h.st)
	}
	h.start(t)
	return h, ac, acc, logs
}

func (h *harness) sendAs(t *testing.T, addr Address, id, text string) {
	t.Helper()
	if _, err := h.g.Deliver(context.Background(), Inbound{Address: addr, MessageID: id, SenderID: "u1", Text: text}); err != nil {
		t.Fatalf("Deliver(%s): %v", id, err)
	}
}

func (c *fakeCodex) turnCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.turns)
}

// Without an account a message is answered at once with the fix, no turn
// starts, its inbox row is closed failed (it does not run after a login or
// a restart), and the missing account is logged once however often it is
// read. Once codex reports an account, messages run again.
func TestNoAccountAnswersAtOnceAndRecovers(t *testing.T) {
	h, ac, acc, logs := newAccountHarness(t, noAccount)
	if got := acc.CodexUnavailable(); got != account.MissingReason {
		t.Fatalf("CodexUnavailable = %q", got)
	}
	h.send(t, "a", "m1", "hello")
	if out := h.p.replyTo(t, "m1"); out.Text != account.MissingReason {
		t.Errorf("reply %q, want the reason", out.Text)
	}
	h.send(t, "a", "m2", "/compact")
	if out := h.p.replyTo(t, "m2"); out.Text != account.MissingReason {
		t.Errorf("/compact reply %q, want the reason", out.Text)
	}
	if n := h.cx.turnCount(); n != 0 {
		t.Errorf("%d turns started without an account", n)
	}
	if st := h.st.inboundState(1); st != store.InboundFailed {
		t.Errorf("inbox row state %q, want %q", st, store.InboundFailed)
	}
	acc.AccountUpdated(codex.AccountUpdate{}) // still none: no second error event
	if n := logs.FilterMessage("codex.account_missing").Len(); n != 1 {
		t.Errorf("codex.account_missing logged %d times, want 1", n)
	}
	if e := logs.FilterMessage("codex.account_missing").All(); len(e) == 1 &&
		!strings.Contains(e[0].ContextMap()["fix"].(string), "codex login --device-auth") {
		t.Errorf("the event does not name the fix: %v", e[0].ContextMap())
	}

	ac.setAccount(chatgpt)
	acc.AccountUpdated(codex.AccountUpdate{AuthMode: "chatgpt", PlanType: "plus"})
	if got := acc.CodexUnavailable(); got != "" {
		t.Fatalf("CodexUnavailable after login = %q", got)
	}
	h.send(t, "a", "m3", "again")
	if out := h.p.replyTo(t, "m3"); out.Text != "re: again" {
		t.Errorf("reply after login %q", out.Text)
	}
	if n := h.cx.turnCount(); n != 1 {
		t.Errorf("%d turns, want only the one after login", n)
	}
}

// A provider that needs no OpenAI login is usable without an account; an
// account/read that fails leaves the state as it was.
func TestAccountCheckEdgeCases(t *testing.T) {
	_, ac, acc, _ := newAccountHarness(t, codex.Account{RequiresOpenAIAuth: false})
	if got := acc.CodexUnavailable(); got != "" {
		t.Errorf("custom provider: CodexUnavailable = %q", got)
	}
	ac.amu.Lock()
	ac.readErr = errors.New("boom")
	ac.amu.Unlock()
	if err := acc.CheckAccount(context.Background()); err == nil {
		t.Error("CheckAccount hid a read error")
	}
	if got := acc.CodexUnavailable(); got != "" {
		t.Errorf("a read error changed the state: %q", got)
	}
}

// /login in a private chat or on the API lane sends the device URL and code
// and later how the login ended; in a group it is refused without starting
// a login.
func TestLoginCommand(t *testing.T) {
	h, ac, acc, _ := newAccountHarness(t, noAccount)
	group := Address{Platform: "test", Kind: LaneGroup, ChatID: "g1"}
	h.sendAs(t, group, "g-1", "/login")
	if out := h.p.replyTo(t, "g-1"); !strings.Contains(out.Text, "only in a private chat") {
		t.Errorf("group /login reply %q", out.Text)
	}
	ac.amu.Lock()
	started := ac.logins
	ac.amu.Unlock()
	if started != 0 {
		t.Fatalf("a group started %d logins", started)
	}

	dm := Address{Platform: "test", Kind: LaneDM, ChatID: "u1"}
	h.sendAs(t, dm, "d-1", "/login")
	out := h.p.replyTo(t, "d-1")
	if !strings.Contains(out.Text, "https://auth.example/codex/device") || !strings.Contains(out.Text, "WXYZ-9876") {
		t.Errorf("DM /login reply %q lacks the URL and code", out.Text)
	}
	ac.setAccount(chatgpt)
	acc.LoginCompleted(codex.LoginResult{LoginID: "login-7", Success: true})
	if out := h.p.replyTo(t, "d-1"); !strings.Contains(out.Text, "logged in") {
		t.Errorf("login completed notice %q", out.Text)
	}
	if got := acc.CodexUnavailable(); got != "" {
		t.Errorf("CodexUnavailable after a successful login = %q", got)
	}

	h.send(t, "api", "a-1", "/login")
	if out := h.p.replyTo(t, "a-1"); !strings.Contains(out.Text, "already logged in (chatgpt, me@example.com)") {
		t.Errorf("API /login when logged in: %q", out.Text)
	}
}

func TestLoginFailures(t *testing.T) {
	h, ac, acc, _ := newAccountHarness(t, noAccount)
	ac.amu.Lock()
	ac.loginErr = &codex.RPCError{Method: "account/login/start", Code: -32603, Message: "failed to request device code: offline"}
	ac.amu.Unlock()
	h.send(t, "api", "a-1", "/login")
	if out := h.p.replyTo(t, "a-1"); !strings.Contains(out.Text, "Could not start the Codex login: failed to request device code") {
		t.Errorf("failed start reply %q", out.Text)
	}

	ac.amu.Lock()
	ac.loginErr = nil
	ac.amu.Unlock()
	h.send(t, "api", "a-2", "/login")
	h.p.replyTo(t, "a-2")
	acc.LoginCompleted(codex.LoginResult{LoginID: "login-7", Success: false, Error: "device code expired"})
	if out := h.p.replyTo(t, "a-2"); !strings.Contains(out.Text, "login failed: device code expired") {
		t.Errorf("failed login notice %q", out.Text)
	}
	if got := acc.CodexUnavailable(); got == "" {
		t.Error("a failed login cleared the missing account")
	}
	// A login started elsewhere (the codex CLI) has no chat to tell.
	acc.LoginCompleted(codex.LoginResult{LoginID: "cli-login", Success: false})
	h.send(t, "api", "a-3", "/help")
	if out := h.p.next(t); out.InReplyTo != "a-3" {
		t.Errorf("next message %+v, want the /help reply", out)
	}
}

// A message recorded before a restart that finds codex without an account
// is answered with the reason and closed, like a new one.
func TestNoAccountRefusesRecoveredMessages(t *testing.T) {
	var id int64
	h, _, _, _ := newAccountHarness(t, noAccount, func(st *fakeStore) {
		ctx := context.Background()
		st.EnsureLane(ctx, laneKey(apiAddr("b")))
		id, _, _ = st.RecordInbound(ctx, store.Inbound{Platform: "test", MessageID: "b1", SessionKey: "v1:test:b", Text: "pending job"})
	})
	if out := h.p.replyTo(t, "b1"); out.Text != account.MissingReason {
		t.Errorf("recovered message answered %q", out.Text)
	}
	waitFor(t, "the recovered row closed", func() bool { return h.st.inboundState(id) == store.InboundFailed })
	if n := h.cx.turnCount(); n != 0 {
		t.Errorf("%d turns started", n)
	}
}

// The console's login: the URL and code come back to the caller (no chat
// waits), a failed start is an error naming codex's reason, and a login is
// not started while codex already has an account.
func TestStartDeviceLogin(t *testing.T) {
	_, ac, acc, _ := newAccountHarness(t, noAccount)
	login, note, err := acc.StartDeviceLogin(context.Background())
	if err != nil || note != "" || login.VerificationURL != "https://auth.example/codex/device" || login.UserCode != "WXYZ-9876" {
		t.Errorf("StartDeviceLogin = %+v, %q, %v", login, note, err)
	}
	if done, _ := acc.LoginOutcome("login-7"); done {
		t.Error("the login ended before codex said so")
	}
	acc.LoginCompleted(codex.LoginResult{LoginID: "login-7", Success: false, Error: "device code expired"})
	if done, failure := acc.LoginOutcome("login-7"); !done || failure != "the Codex login failed: device code expired" {
		t.Errorf("LoginOutcome after a failure = %v, %q", done, failure)
	}
	if done, _ := acc.LoginOutcome("other"); done {
		t.Error("another login's outcome was reported")
	}
	ac.amu.Lock()
	ac.loginErr = &codex.RPCError{Method: "account/login/start", Code: -32603, Message: "failed to request device code: offline"}
	ac.amu.Unlock()
	if _, _, err := acc.StartDeviceLogin(context.Background()); err == nil ||
		!strings.Contains(err.Error(), "could not start the Codex login: failed to request device code") {
		t.Errorf("failed start: %v", err)
	}
	ac.setAccount(chatgpt)
	ac.amu.Lock()
	before := ac.logins
	ac.amu.Unlock()
	if _, note, err := acc.StartDeviceLogin(context.Background()); err != nil || !strings.Contains(note, "already logged in") {
		t.Errorf("logged in: note %q, err %v", note, err)
	}
	ac.amu.Lock()
	defer ac.amu.Unlock()
	if ac.logins != before {
		t.Error("a login started while codex had an account")
	}
}

// An API key from the console makes codex usable at once (no wait for
// account/updated), and the next message runs; a refusal that quotes the
// key is returned and logged without it.
func TestLoginAPIKey(t *testing.T) {
	h, ac, acc, logs := newAccountHarness(t, noAccount)
	if acc.CodexUnavailable() == "" {
		t.Fatal("usable before the login")
	}
	const key = "sk-secret-123"
	ac.keyErr = &codex.RPCError{Method: "account/login/start", Code: -32600, Message: "bad key sk-secret-123"}
	err := acc.LoginAPIKey(context.Background(), key)
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "bad key [the key]") {
		t.Errorf("refused login error = %v, want codex's reason without the key", err)
	}
	for _, e := range logs.All() {
		if strings.Contains(fmt.Sprint(e.Message, e.ContextMap()), key) {
			t.Errorf("the key is in the log: %s %v", e.Message, e.ContextMap())
		}
	}
	ac.keyErr = nil
	if err := acc.LoginAPIKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if got := acc.CodexUnavailable(); got != "" {
		t.Errorf("after the login: %q, want usable", got)
	}
	h.send(t, "a", "m1", "hello")
	if out := h.p.replyTo(t, "m1"); out.Text != "re: hello" {
		t.Errorf("the message after the login was answered %q", out.Text)
	}
	if len(ac.keys) != 1 || ac.keys[0] != key {
		t.Errorf("codex was logged in with %q", ac.keys)
	}
}
