package webconsole_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/webconsole"
)

// fakeAccount is the gateway's account gate.
type fakeAccount struct {
	mu     sync.Mutex
	reason string
	note   string
	err    error
	starts int
	failed string   // the failure LoginOutcome reports for "l1"
	keys   []string // the API keys logged in with
	keyErr error
}

// LoginAPIKey makes codex usable, as a key codex takes does, unless keyErr.
func (f *fakeAccount) LoginAPIKey(_ context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keyErr != nil {
		return f.keyErr
	}
	f.keys = append(f.keys, key)
	f.reason = ""
	return nil
}

func (f *fakeAccount) LoginOutcome(id string) (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return id == "l1" && f.failed != "", f.failed
}

func (f *fakeAccount) CodexUnavailable() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reason
}

func (f *fakeAccount) StartDeviceLogin(context.Context) (codex.Login, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts++
	if f.err != nil || f.note != "" {
		return codex.Login{}, f.note, f.err
	}
	return codex.Login{ID: "l1", VerificationURL: "https://auth.example/codex/device", UserCode: "ABCD-1234"}, "", nil
}

func (f *fakeAccount) set(fn func(*fakeAccount)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

type accountBody struct {
	Usable  bool
	Reason  string
	Account *struct {
		Type               string
		RequiresOpenAIAuth bool `json:"requires_openai_auth"`
		Email              string
	}
	Login *struct {
		VerificationURL string `json:"verification_url"`
		UserCode        string `json:"user_code"`
		Error           string
	}
	Note  string
	Error string
}

func newAccountWorld(t *testing.T, token string, acc *fakeAccount, cx *fakeCodexStatus, now func() time.Time) *consoleWorld {
	t.Helper()
	w := newConsoleWorld(t, token)
	c := webconsole.NewConsole(webconsole.ConsoleConfig{Store: w.st, Live: w.live, Token: token,
		Status: &webconsole.StatusSources{Codex: cx, Now: now}, Account: acc})
	p := api.New(api.Config{Listen: "127.0.0.1:0", Token: token, Answers: w.st, Handlers: c.Routes()})
	w.srv.Config.Handler = p.Handler()
	return w
}

// GET /api/account says whether codex can answer and why not, with the
// account (no e-mail); POST /api/account/login starts a device-code login
// once and hands the same URL and code back until the account is usable
// or the code expires; both need the token and their own method.
func TestConsoleAccount(t *testing.T) {
	acc := &fakeAccount{reason: "Codex is not logged in"}
	cx := &fakeCodexStatus{account: codex.Account{RequiresOpenAIAuth: true}}
	var mu sync.Mutex
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	w := newAccountWorld(t, "s3cret", acc, cx, clock)
	auth := map[string]string{"Authorization": "Bearer s3cret"}
	postJSON := map[string]string{"Authorization": "Bearer s3cret", "Content-Type": "application/json"}

	for _, path := range []string{"/api/account", "/api/account/login"} {
		if code := w.do(t, http.MethodGet, path, nil, nil); code != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d, want 401", path, code)
		}
	}
	if code := w.do(t, http.MethodPost, "/api/account", auth, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/account: %d, want 405", code)
	}
	if code := w.do(t, http.MethodGet, "/api/account/login", auth, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/account/login: %d, want 405", code)
	}

	var got accountBody
	if code := w.get(t, "/api/account", auth, &got); code != http.StatusOK || got.Usable || got.Reason != "Codex is not logged in" ||
		got.Account == nil || !got.Account.RequiresOpenAIAuth || got.Login != nil {
		t.Fatalf("GET /api/account: %d %+v", code, got)
	}
	for i := range 2 {
		got = accountBody{}
		if code := w.do(t, http.MethodPost, "/api/account/login", postJSON, &got); code != http.StatusOK || got.Login == nil ||
			got.Login.VerificationURL != "https://auth.example/codex/device" || got.Login.UserCode != "ABCD-1234" {
			t.Fatalf("POST /api/account/login #%d: %d %+v", i+1, code, got)
		}
	}
	if acc.starts != 1 {
		t.Errorf("%d logins started, want 1 (the second POST hands the pending one back)", acc.starts)
	}
	for _, ctype := range []string{"", "text/plain", "application/x-www-form-urlencoded"} {
		hdr := map[string]string{"Authorization": "Bearer s3cret", "Content-Type": ctype}
		got = accountBody{}
		if code := w.do(t, http.MethodPost, "/api/account/login", hdr, &got); code != http.StatusUnsupportedMediaType ||
			!strings.Contains(got.Error, "application/json") {
			t.Errorf("POST /api/account/login as %q: %d %+v, want 415 asking for JSON", ctype, code, got)
		}
	}
	got = accountBody{}
	if w.get(t, "/api/account", auth, &got); got.Login == nil || got.Login.UserCode != "ABCD-1234" {
		t.Errorf("GET /api/account while the login is pending: %+v", got)
	}

	// Codex says the login failed: GET shows why, and the next POST
	// starts a new login.
	acc.set(func(f *fakeAccount) { f.failed = "the Codex login failed: device code expired" })
	got = accountBody{}
	if w.get(t, "/api/account", auth, &got); got.Login == nil || got.Login.Error != "the Codex login failed: device code expired" {
		t.Errorf("GET /api/account after a failed login: %+v", got.Login)
	}
	got = accountBody{}
	if code := w.do(t, http.MethodPost, "/api/account/login", postJSON, &got); code != http.StatusOK || got.Login == nil ||
		got.Login.Error != "" || acc.starts != 2 {
		t.Errorf("POST after a failed login: %d %+v, %d starts", code, got.Login, acc.starts)
	}
	acc.set(func(f *fakeAccount) { f.failed = "" })

	// The code expires: the next POST starts a new login.
	mu.Lock()
	now = now.Add(16 * time.Minute)
	mu.Unlock()
	got = accountBody{}
	if w.get(t, "/api/account", auth, &got); got.Login != nil {
		t.Errorf("an expired login is still shown: %+v", got.Login)
	}
	acc.set(func(f *fakeAccount) {
		f.err = errors.New("could not start the Codex login: failed to request device code")
	})
	got = accountBody{}
	if code := w.do(t, http.MethodPost, "/api/account/login", postJSON, &got); code != http.StatusBadGateway ||
		got.Error != "could not start the Codex login: failed to request device code" {
		t.Errorf("failed start: %d %+v", code, got)
	}

	// Logged in: usable, no banner, and a POST starts nothing.
	acc.set(func(f *fakeAccount) { f.reason, f.err, f.note = "", nil, "Codex is already logged in (chatgpt)." })
	cx.account = codex.Account{Type: "chatgpt", Email: "me@example.com", RequiresOpenAIAuth: true}
	got = accountBody{}
	if w.get(t, "/api/account", auth, &got); !got.Usable || got.Reason != "" || got.Account == nil || got.Account.Type != "chatgpt" ||
		got.Account.Email != "" || got.Login != nil {
		t.Errorf("GET /api/account when logged in: %+v", got)
	}
	got = accountBody{}
	if code := w.do(t, http.MethodPost, "/api/account/login", postJSON, &got); code != http.StatusOK || got.Login != nil ||
		got.Note != "Codex is already logged in (chatgpt)." {
		t.Errorf("POST when logged in: %d %+v", code, got)
	}
}

// Without the gateway's account the routes answer 503.
func TestConsoleAccountWithoutSource(t *testing.T) {
	w := newConsoleWorld(t, "")
	for _, r := range []struct{ method, path string }{{http.MethodGet, "/api/account"}, {http.MethodPost, "/api/account/login"}} {
		var body map[string]string
		hdr := map[string]string{"Content-Type": "application/json"}
		if code := w.do(t, r.method, r.path, hdr, &body); code != http.StatusServiceUnavailable || body["error"] == "" {
			t.Errorf("%s %s: %d %v, want 503", r.method, r.path, code, body)
		}
	}
}

// POST /api/account/api-key logs codex in with the key and answers with
// the account, usable; a blank, spaced, oversized or non-JSON body is 400
// or 413 without a login; codex's refusal is 502 and never echoes the key;
// it needs the token and POST.
func TestConsoleAPIKeyLogin(t *testing.T) {
	acc := &fakeAccount{reason: "Codex is not logged in"}
	cx := &fakeCodexStatus{account: codex.Account{RequiresOpenAIAuth: true}}
	w := newAccountWorld(t, "s3cret", acc, cx, time.Now)
	postAs := func(ctype, body string, token string) (int, accountBody) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, w.srv.URL+"/api/account/api-key", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ctype)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got accountBody
		_ = json.NewDecoder(resp.Body).Decode(&got)
		return resp.StatusCode, got
	}
	post := func(body string, token string) (int, accountBody) {
		t.Helper()
		return postAs("application/json", body, token)
	}
	if code, _ := post(`{"api_key":"sk-a"}`, ""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	if code := w.do(t, http.MethodGet, "/api/account/api-key", map[string]string{"Authorization": "Bearer s3cret"}, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", code)
	}
	for _, bad := range []struct {
		body string
		want int
	}{
		{`{"api_key":""}`, http.StatusBadRequest},
		{`{"api_key":"  "}`, http.StatusBadRequest},
		{`{"api_key":"sk two"}`, http.StatusBadRequest},
		{`sk-plain`, http.StatusBadRequest},
		{`{"api_key":"` + strings.Repeat("k", 5000) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		if code, got := post(bad.body, "s3cret"); code != bad.want || got.Error == "" {
			t.Errorf("body %.40q: %d %+v, want %d with an error", bad.body, code, got, bad.want)
		}
	}
	acc.set(func(f *fakeAccount) {
		f.keyErr = errors.New("could not log Codex in with the API key: rejected sk-live-1")
	})
	code, got := post(`{"api_key":"sk-live-1"}`, "s3cret")
	if code != http.StatusBadGateway || strings.Contains(got.Error, "sk-live-1") || !strings.Contains(got.Error, "rejected") {
		t.Errorf("codex refused: %d %+v, want 502 with the reason and without the key", code, got)
	}
	acc.set(func(f *fakeAccount) { f.keyErr = nil })
	code, got = post(`{"api_key":" sk-live-1 "}`, "s3cret")
	if code != http.StatusOK || !got.Usable {
		t.Errorf("a good key: %d %+v, want 200 usable", code, got)
	}
	if len(acc.keys) != 1 || acc.keys[0] != "sk-live-1" {
		t.Errorf("codex was given %q, want the trimmed key once", acc.keys)
	}

	// Only JSON: a form or text/plain, which a page of another origin may
	// send without asking, is 415 and logs nothing in.
	for _, ctype := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		if code, got := postAs(ctype, `{"api_key":"sk-form"}`, "s3cret"); code != http.StatusUnsupportedMediaType ||
			!strings.Contains(got.Error, "application/json") {
			t.Errorf("Content-Type %q: %d %+v, want 415 asking for JSON", ctype, code, got)
		}
	}

	// Logged in: a key replaces the account only when the body says so;
	// the 409 names the account, never a key.
	cx.account = codex.Account{Type: "chatgpt", Email: "me@example.com", PlanType: "plus", RequiresOpenAIAuth: true}
	code, got = post(`{"api_key":"sk-live-2"}`, "s3cret")
	if code != http.StatusConflict || !strings.Contains(got.Error, "chatgpt") || !strings.Contains(got.Error, "me@example.com") ||
		!strings.Contains(got.Error, `"replace": true`) || strings.Contains(got.Error, "sk-") {
		t.Errorf("a key while logged in: %d %+v, want 409 naming the account and replace, without a key", code, got)
	}
	cx.account, cx.accountErr = codex.Account{}, errors.New("account/read timed out")
	if code, got = post(`{"api_key":"sk-live-2", "replace": false}`, "s3cret"); code != http.StatusConflict || !strings.Contains(got.Error, "could not be read") {
		t.Errorf("a key while the account is unreadable: %d %+v, want 409", code, got)
	}
	if len(acc.keys) != 1 {
		t.Errorf("codex was given %q after the 409s, want only the first key", acc.keys)
	}
	cx.account, cx.accountErr = codex.Account{Type: "chatgpt", Email: "me@example.com", RequiresOpenAIAuth: true}, nil
	if code, got = post(`{"api_key":"sk-live-2", "replace": true}`, "s3cret"); code != http.StatusOK {
		t.Errorf("a key with replace: %d %+v, want 200", code, got)
	}
	if len(acc.keys) != 2 || acc.keys[1] != "sk-live-2" {
		t.Errorf("codex was given %q, want the replacing key second", acc.keys)
	}
}
