package webconsole

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// The console's account routes: whether codex can answer, shown in the
// page's header, and the device-code login the page's banner starts.
//
//	GET  /api/account        {usable, reason, account, login}
//	POST /api/account/login  start a device-code login (or hand back the
//	                         one still pending); {login} or {note}
//	POST /api/account/api-key  {"api_key": "sk-…", "replace": bool}: log
//	                         codex in with an OpenAI API key; the account as
//	                         GET shows it. While codex has an account, 409
//	                         naming it unless replace is true.
//
// Both POSTs take only Content-Type: application/json (415): a page of
// another origin may send a form or text/plain without the browser asking
// first, but never JSON.
//
// login is {verification_url, user_code, started_at} and, once codex says
// the login failed, error; a POST after a failure starts a new login.
//
// The login's end is not pushed: the page polls GET /api/account, which
// turns usable once codex reports the account (account/login/completed and
// account/updated reach the account feature).

// consoleLoginLife is how long a started login's URL and code are shown
// and handed back instead of starting another: codex's device codes live
// 15 minutes.
const consoleLoginLife = 15 * time.Minute

// AccountControl is the gateway's account gate; the account feature is one.
type AccountControl interface {
	CodexUnavailable() string
	StartDeviceLogin(ctx context.Context) (codex.Login, string, error)
	LoginOutcome(id string) (done bool, failure string)
	LoginAPIKey(ctx context.Context, key string) error
}

// maxAPIKeyBody bounds POST /api/account/api-key: a key is a few hundred
// bytes at most.
const maxAPIKeyBody = 4 << 10

type accountReport struct {
	Usable       bool         `json:"usable"`
	Reason       string       `json:"reason,omitempty"`
	Account      *accountView `json:"account"` // null when account/read failed
	AccountError string       `json:"account_error,omitempty"`
	Login        *loginView   `json:"login"` // the console's pending login, else null
}

type loginView struct {
	VerificationURL string    `json:"verification_url"`
	UserCode        string    `json:"user_code"`
	StartedAt       time.Time `json:"started_at"`
	// Error is why codex says the login failed; the page then offers
	// "Log in" again, and the next POST starts a new login.
	Error string `json:"error,omitempty"`
	id    string
}

// consoleLogin is the login the console started last, shown until the
// account is usable or the code expires.
type consoleLogin struct {
	mu    sync.Mutex
	login *loginView
}

// current returns the pending login, with its failure once codex reports
// one; usable (or an expired code) forgets it.
func (l *consoleLogin) current(now time.Time, usable bool, acc AccountControl) *loginView {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.login != nil && (usable || now.Sub(l.login.StartedAt) > consoleLoginLife) {
		l.login = nil
	}
	if l.login != nil && l.login.Error == "" {
		if done, failure := acc.LoginOutcome(l.login.id); done && failure != "" {
			failed := *l.login
			failed.Error = failure
			l.login = &failed
		}
	}
	return l.login
}

func (c *Console) accountState(w http.ResponseWriter, r *http.Request) {
	if c.account == nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody("the account is not available in this process"))
		return
	}
	reason := c.account.CodexUnavailable()
	rep := accountReport{Usable: reason == "", Reason: reason}
	if c.statusSrc != nil && c.statusSrc.Codex != nil {
		cv := codexOf(r.Context(), c.statusSrc.Codex, "")
		rep.Account, rep.AccountError = cv.Account, cv.AccountError
	}
	rep.Login = c.login.current(c.now(), rep.Usable, c.account)
	writeJSON(w, http.StatusOK, rep)
}

func (c *Console) startLogin(w http.ResponseWriter, r *http.Request) {
	if !jsonContent(w, r) {
		return
	}
	if c.account == nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody("the account is not available in this process"))
		return
	}
	now := c.now()
	usable := c.account.CodexUnavailable() == ""
	if l := c.login.current(now, usable, c.account); l != nil && l.Error == "" {
		writeJSON(w, http.StatusOK, map[string]any{"login": l})
		return
	}
	login, note, err := c.account.StartDeviceLogin(r.Context())
	switch {
	case err != nil:
		writeJSON(w, http.StatusBadGateway, errorBody(err.Error()))
		return
	case note != "":
		writeJSON(w, http.StatusOK, map[string]any{"login": nil, "note": note})
		return
	}
	v := &loginView{VerificationURL: login.VerificationURL, UserCode: login.UserCode, StartedAt: now, id: login.ID}
	c.login.mu.Lock()
	c.login.login = v
	c.login.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"login": v})
}

// loginAPIKey logs codex in with the key in the body and answers with the
// account as it is then (usable at once when codex took the key). The key
// is never echoed: a refusal is codex's reason without it.
func (c *Console) loginAPIKey(w http.ResponseWriter, r *http.Request) {
	if !jsonContent(w, r) {
		return
	}
	if c.account == nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody("the account is not available in this process"))
		return
	}
	var body struct {
		APIKey  string `json:"api_key"`
		Replace bool   `json:"replace"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAPIKeyBody))
	if err := dec.Decode(&body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, errorBody("the body is over 4 KiB; an API key is shorter"))
			return
		}
		writeJSON(w, http.StatusBadRequest, errorBody(`the body must be JSON: {"api_key": "sk-…"}`))
		return
	}
	key := strings.TrimSpace(body.APIKey)
	if codex.CheckAPIKey(key) != nil {
		writeJSON(w, http.StatusBadRequest, errorBody("api_key must be an OpenAI API key: one word, not empty"))
		return
	}
	if !body.Replace {
		if held := c.heldAccount(r.Context()); held != "" {
			writeJSON(w, http.StatusConflict, errorBody(held+`; send "replace": true to replace it with the API key`))
			return
		}
	}
	if err := c.account.LoginAPIKey(r.Context(), key); err != nil {
		writeJSON(w, http.StatusBadGateway, errorBody(strings.ReplaceAll(err.Error(), key, "[the key]")))
		return
	}
	c.accountState(w, r)
}

// heldAccount says which account an API key would replace ("" when codex
// has none). An account that cannot be read counts as held: the key would
// log out whoever is logged in. The label is the account's kind and e-mail
// address, never a credential.
func (c *Console) heldAccount(ctx context.Context) string {
	if c.statusSrc == nil || c.statusSrc.Codex == nil {
		return "Codex's account cannot be read here, so the key could replace a login"
	}
	ctx, cancel := context.WithTimeout(ctx, statusCallTimeout)
	defer cancel()
	a, err := c.statusSrc.Codex.Account(ctx)
	switch {
	case err != nil:
		return "Codex's account could not be read (" + err.Error() + "), so the key could replace a login"
	case a.Type == "":
		return ""
	case a.Email != "":
		return "Codex is logged in with the " + a.Type + " account " + a.Email
	}
	return "Codex is logged in with an account of type " + a.Type
}

// jsonContent answers 415 unless the request says its body is JSON.
func jsonContent(w http.ResponseWriter, r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, errorBody("Content-Type must be application/json"))
		return false
	}
	return true
}

func (c *Console) now() time.Time {
	if c.statusSrc != nil && c.statusSrc.Now != nil {
		return c.statusSrc.Now()
	}
	return time.Now()
}
