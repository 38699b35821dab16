package main

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// The console against the built daemon whose real codex has a bare
// CODEX_HOME (no account, no provider: it needs an OpenAI login). Every
// page's header says codex is not logged in and a banner gives the reason
// with a "Log in" button; a message is refused at once, and the refusal
// reads as the lane's reply; "Log in" starts codex's device-code login and
// shows its URL and code, which a reload of the page shows again, and a
// second click does not ask codex for a second code.
//
// Once the user "enters" the code, codex's account/login/completed (a
// failure) reaches the banner. An OpenAI API key entered in the banner
// then logs codex in for real: the banner goes and messages are answered.
//
// codex asks a fake issuer for the code (CODEX_APP_SERVER_LOGIN_ISSUER)
// and its tokens, and a fake ChatGPT backend (chatgpt_base_url) for the
// workspace. Not covered: a ChatGPT login that succeeds. After
// the token exchange the real codex checks the workspace with the ChatGPT
// backend, refuses a plain-HTTP one, and refused the faked HTTPS answers
// tried ("invalid account routing override"), so a successful login cannot
// be faked here; the API key shows the banner going with the real codex.
func TestBrowserConsoleLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon and a browser")
	}
	cleanEnv(t)
	var codes atomic.Int32
	var entered atomic.Bool // the user entered the code
	idToken := fakeIDToken()
	issuer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/accounts/deviceauth/usercode":
			codes.Add(1)
			fmt.Fprint(w, `{"device_auth_id":"dev-1","user_code":"GWTEST-1234","interval":"1"}`)
		case r.URL.Path == "/api/accounts/deviceauth/token" && entered.Load():
			fmt.Fprint(w, `{"authorization_code":"code-1","code_challenge":"challenge","code_verifier":"verifier"}`)
		case r.URL.Path == "/api/accounts/deviceauth/token":
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"error":"authorization_pending"}`)
		case r.URL.Path == "/oauth/token":
			fmt.Fprintf(w, `{"id_token":%q,"access_token":%q,"refresh_token":"refresh-1"}`, idToken, idToken)
		default: // the ChatGPT backend's workspace check
			http.NotFound(w, r)
		}
	}))
	defer issuer.Close()
	t.Setenv("CODEX_APP_SERVER_LOGIN_ISSUER", issuer.URL)
	b := newBrowser(t)
	model := codextest.NewModel(t)
	bin := buildDaemon(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	home := codextest.Home(t)
	// The ChatGPT backend too is the fake: nothing leaves the machine.
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf("chatgpt_base_url = %q\nopenai_base_url = %q\n",
		issuer.URL+"/backend-api/", strings.TrimRight(model.URL, "/")+"/v1")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := writeProcessConfig(t, dir, map[string]any{
		"state_dir": filepath.Join(dir, "state"),
		"log":       map[string]any{"level": "debug", "format": "json"},
		"codex": map[string]any{"command": codextest.CodexBinary(t), "home": home,
			"cwd": filepath.Join(dir, "work"), "start_timeout": "60s"},
		"api": map[string]any{"listen": addr},
	})
	api := &client.API{Base: "http://" + addr, HTTP: &http.Client{Timeout: time.Minute}}
	d := startDaemon(t, bin, cfgFile, dir, "consolelogin", listenNotify(t).path)
	waitHealthReason(t, api, d, "not logged in")

	b.run(t, "open the lane", chromedp.Navigate(api.Base+"/#/lane/v1:api:web"), chromedp.WaitVisible(chromedp.CSS(`#composer-text`)))
	b.waitJS(t, "the header says codex is not logged in",
		`document.getElementById('account-state').textContent === 'Codex: not logged in'`)
	b.waitJS(t, "the banner with the reason", `!document.getElementById('account-banner').hidden && `+
		`document.getElementById('account-reason').textContent.startsWith('Codex is not logged in')`)

	// A message: refused at once, shown as the lane's reply.
	b.send(t, "hello?")
	if got := evalJS[string](t, b, lastDone); got != "notice" {
		t.Errorf("the reply's status %q, want notice", got)
	}
	if got := evalJS[string](t, b, lastReply); !strings.HasPrefix(got, "Codex is not logged in: run codex login --device-auth") {
		t.Errorf("the reply %q, want the refusal", got)
	}
	if !evalJS[bool](t, b, `document.querySelector('.live-reply:last-of-type').classList.contains('assistant')`) {
		t.Error("the refusal is not shown as an assistant message")
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("the model got %d requests", n)
	}

	// "Log in": codex's device code, from the fake issuer.
	b.run(t, "click Log in", chromedp.Click(chromedp.CSS(`#account-login`)))
	b.waitJS(t, "the login's URL and code", `document.getElementById('account-login-code') !== null || `+
		`document.getElementById('account-login-info').className === 'error'`)
	wantURL := issuer.URL + "/codex/device"
	shownLogin := func(when string) {
		t.Helper()
		info := evalJS[string](t, b, `document.getElementById('account-login-info').textContent`)
		if !strings.Contains(info, "Open "+wantURL+" and enter the code GWTEST-1234") {
			t.Errorf("%s: the banner says %q, want the URL %s and the code", when, info, wantURL)
		}
		if href := evalJS[string](t, b, `document.getElementById('account-login-url').href`); href != wantURL {
			t.Errorf("%s: the link goes to %q", when, href)
		}
	}
	shownLogin("after Log in")
	b.screenshot(t, "console-login.png")
	b.run(t, "click Log in again", chromedp.Click(chromedp.CSS(`#account-login`)))
	b.waitJS(t, "the second click answered", `!document.getElementById('account-login').disabled && `+
		`document.getElementById('account-login-code') !== null`)
	b.run(t, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#composer-text`)))
	b.waitJS(t, "the pending login after a reload", `document.getElementById('account-login-code') !== null`)
	shownLogin("after a reload")
	// The refused message and its refusal are still the lane's conversation.
	b.waitJS(t, "the refused message after a reload", `[...document.querySelectorAll('#transcript .msg.user .text')].some(m => m.textContent === 'hello?')`)
	b.waitJS(t, "the refusal after a reload", `[...document.querySelectorAll('#transcript .msg.notice')].some(m => `+
		`m.querySelector('header').textContent.startsWith('gatewayd') && m.querySelector('.text').textContent.startsWith('Codex is not logged in'))`)
	if n := codes.Load(); n != 1 {
		t.Errorf("codex asked for %d device codes, want 1", n)
	}

	// The user enters the code; codex gets the tokens, and its workspace
	// check fails: account/login/completed says so, and the banner too.
	entered.Store(true)
	b.waitJS(t, "the failed login in the banner", `document.getElementById('account-login-info').textContent.startsWith('The Codex login failed')`)
	t.Logf("banner: %s", evalJS[string](t, b, `document.getElementById('account-login-info').textContent`))
	if evalJS[bool](t, b, `document.getElementById('account-banner').hidden`) {
		t.Error("the banner went after a failed login")
	}
	// "Log in" again starts a new login.
	entered.Store(false)
	b.run(t, "click Log in after the failure", chromedp.Click(chromedp.CSS(`#account-login`)))
	b.waitJS(t, "a new code", `document.getElementById('account-login-code') !== null`)
	shownLogin("after the failure")
	if n := codes.Load(); n != 2 {
		t.Errorf("codex asked for %d device codes, want 2", n)
	}

	// Every page: the status page keeps the header and the banner.
	b.run(t, "open the status page", chromedp.Navigate(api.Base+"/#/status"), chromedp.WaitVisible(chromedp.CSS(`#status-overview`)))
	b.waitJS(t, "the banner on the status page", `!document.getElementById('account-banner').hidden && `+
		`document.getElementById('account-state').textContent === 'Codex: not logged in'`)

	// An OpenAI API key instead: codex takes it, the banner goes and the
	// header names the account on every page; the next message reaches the
	// model with that key (openai_base_url is the fake model).
	const key = "sk-console-test-key"
	b.run(t, "enter an API key", chromedp.Navigate(api.Base+"/#/lane/v1:api:web"), chromedp.WaitVisible(chromedp.CSS(`#composer-text`)),
		chromedp.SendKeys(chromedp.CSS(`#account-api-key`), key), chromedp.Click(chromedp.CSS(`#account-key-save`)))
	b.waitJS(t, "the banner gone", `document.getElementById('account-banner').hidden && `+
		`document.getElementById('account-state').textContent === 'Codex: apiKey'`)
	// The failed ChatGPT login may have left codex an account: the key
	// then replaces it only after the user confirms, told which one.
	for _, d := range b.dialogsSeen() {
		if !strings.Contains(d, "Replace it with this API key?") {
			t.Errorf("unexpected dialog %q", d)
		}
	}
	if v := evalJS[string](t, b, `document.getElementById('account-api-key').value`); v != "" {
		t.Errorf("the key field still holds %q", v)
	}
	b.screenshot(t, "console-logged-in.png")
	b.send(t, "and now?")
	if got := evalJS[string](t, b, lastReply); got != "ECHO: and now?" {
		t.Errorf("the reply after the login %q, want the model's", got)
	}
	if reqs := model.Requests(); len(reqs) == 0 || reqs[len(reqs)-1].Header.Get("Authorization") != "Bearer "+key {
		t.Errorf("the model's last request does not carry the key (%d requests)", len(reqs))
	}
	if strings.Contains(d.logs(), key) {
		t.Error("the API key is in the daemon's log")
	}
	b.noExceptions(t)
	if code := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d", code)
	}
}

// fakeIDToken is an unsigned JWT with the claims codex reads from a
// ChatGPT login's id_token (codex does not check the signature).
func fakeIDToken() string {
	part := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	return part(`{"alg":"none","typ":"JWT"}`) + "." + part(fmt.Sprintf(`{"email":"tester@example.com","exp":%d,`+
		`"https://api.openai.com/auth":{"chatgpt_plan_type":"plus","chatgpt_account_id":"acc-1","chatgpt_user_id":"user-1"}}`,
		time.Now().Add(time.Hour).Unix())) + ".sig"
}
