package matrix_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/platforms/matrix"
)

const (
	checkToken    = "syt_CHECK_token_secret"
	checkPassword = "CHECK-password-secret"
	loginToken    = "syt_LOGIN_new_token"
)

// checkHomeserver answers whoami and login as the client-server API does:
// errors as {"errcode", "error"} with 401/403/429, the login flows on GET
// /login and m.login.password with an m.id.user identifier on POST.
type checkHomeserver struct {
	*httptest.Server
	passwordLogin atomic.Bool // offer m.login.password (a server behind OIDC does not)
	logins        atomic.Int32
}

func newCheckHomeserver(t *testing.T) *checkHomeserver {
	t.Helper()
	h := &checkHomeserver{}
	h.passwordLogin.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_matrix/client/v3/account/whoami", func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer " + checkToken, "Bearer " + loginToken:
			checkReply(w, http.StatusOK, map[string]any{"user_id": "@codex:example.org", "device_id": "GWDEVICE", "is_guest": false})
		case "":
			checkReply(w, http.StatusUnauthorized, map[string]any{"errcode": "M_MISSING_TOKEN", "error": "Missing access token"})
		case "Bearer syt_rate_limited":
			checkReply(w, http.StatusTooManyRequests, map[string]any{"errcode": "M_LIMIT_EXCEEDED", "error": "Too many requests", "retry_after_ms": 2000})
		default:
			checkReply(w, http.StatusUnauthorized, map[string]any{"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token passed.", "soft_logout": false})
		}
	})
	mux.HandleFunc("GET /_matrix/client/v3/login", func(w http.ResponseWriter, r *http.Request) {
		flows := []map[string]any{{"type": "m.login.sso"}, {"type": "m.login.token"}}
		if h.passwordLogin.Load() {
			flows = append(flows, map[string]any{"type": "m.login.password"})
		}
		checkReply(w, http.StatusOK, map[string]any{"flows": flows})
	})
	mux.HandleFunc("POST /_matrix/client/v3/login", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Type       string `json:"type"`
			Identifier struct {
				Type string `json:"type"`
				User string `json:"user"`
			} `json:"identifier"`
			Password   string `json:"password"`
			DeviceName string `json:"initial_device_display_name"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Type != "m.login.password" || req.Identifier.Type != "m.id.user" {
			checkReply(w, http.StatusBadRequest, map[string]any{"errcode": "M_UNKNOWN", "error": "Bad login type."})
			return
		}
		if (req.Identifier.User != "codex" && req.Identifier.User != "@codex:example.org") || req.Password != checkPassword {
			checkReply(w, http.StatusForbidden, map[string]any{"errcode": "M_FORBIDDEN", "error": "Invalid username or password"})
			return
		}
		if req.DeviceName != "gatewayd" {
			checkReply(w, http.StatusBadRequest, map[string]any{"errcode": "M_UNKNOWN", "error": "device " + req.DeviceName})
			return
		}
		h.logins.Add(1)
		checkReply(w, http.StatusOK, map[string]any{"user_id": "@codex:example.org", "access_token": loginToken, "device_id": "NEWDEVICE"})
	})
	h.Server = httptest.NewServer(mux)
	t.Cleanup(h.Close)
	return h
}

func checkReply(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func checkNoSecret(t *testing.T, err error) {
	t.Helper()
	for _, s := range []string{"CHECK_token_secret", checkPassword, "LOGIN_new_token", "wrong-secret"} {
		if err != nil && strings.Contains(err.Error(), s) {
			t.Errorf("error shows a secret: %v", err)
		}
	}
}

func TestCheckToken(t *testing.T) {
	h := newCheckHomeserver(t)
	client := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()
	whoami := h.URL + "/_matrix/client/v3/account/whoami"

	got, err := matrix.CheckToken(ctx, client, h.URL+"/", checkToken)
	if err != nil || got != (matrix.Whoami{UserID: "@codex:example.org", DeviceID: "GWDEVICE"}) {
		t.Fatalf("good token: %+v, %v", got, err)
	}

	_, err = matrix.CheckToken(ctx, client, h.URL, "syt_wrong-secret")
	want := "matrix: matrix.access_token refused: " + whoami + " answered 401 M_UNKNOWN_TOKEN: Invalid access token passed."
	if !errors.Is(err, matrix.ErrTokenRefused) || err.Error() != want {
		t.Errorf("wrong token: %v\nwant %s", err, want)
	}
	checkNoSecret(t, err)

	_, err = matrix.CheckToken(ctx, client, h.URL, "syt_rate_limited")
	if err == nil || errors.Is(err, matrix.ErrTokenRefused) || !strings.Contains(err.Error(), "429 M_LIMIT_EXCEEDED") {
		t.Errorf("rate limited: %v, want an error that is no refusal", err)
	}

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	_, err = matrix.CheckToken(ctx, client, down.URL, checkToken)
	if err == nil || errors.Is(err, matrix.ErrTokenRefused) || !strings.HasPrefix(err.Error(), "matrix: "+down.URL+"/_matrix/client/v3/account/whoami: ") {
		t.Errorf("no server: %v, want a transport error naming the URL", err)
	}
	checkNoSecret(t, err)

	_, err = matrix.CheckToken(ctx, client, "matrix.example.org", checkToken)
	if err == nil || !strings.Contains(err.Error(), "matrix.homeserver") {
		t.Errorf("no scheme: %v, want matrix.homeserver named", err)
	}
}

func TestLogin(t *testing.T) {
	h := newCheckHomeserver(t)
	client := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()

	for _, user := range []string{"codex", "@codex:example.org"} {
		tok, err := matrix.Login(ctx, client, h.URL, user, checkPassword)
		if err != nil || tok != loginToken {
			t.Fatalf("login as %s: %q, %v", user, tok, err)
		}
	}
	// The token a login gives is one whoami accepts.
	if who, err := matrix.CheckToken(ctx, client, h.URL, loginToken); err != nil || who.UserID != "@codex:example.org" {
		t.Errorf("whoami with the login's token: %+v, %v", who, err)
	}

	_, err := matrix.Login(ctx, client, h.URL, "codex", "wrong-secret")
	if !errors.Is(err, matrix.ErrLoginRefused) || errors.Is(err, matrix.ErrTokenRefused) ||
		!strings.Contains(err.Error(), "403 M_FORBIDDEN: Invalid username or password") {
		t.Errorf("wrong password: %v", err)
	}
	checkNoSecret(t, err)

	h.passwordLogin.Store(false)
	before := h.logins.Load()
	_, err = matrix.Login(ctx, client, h.URL, "codex", checkPassword)
	if !errors.Is(err, matrix.ErrNoPasswordLogin) || !strings.Contains(err.Error(), "make an access token in a client") {
		t.Errorf("no password flow: %v", err)
	}
	if h.logins.Load() != before {
		t.Error("the password was sent to a server that offers no password login")
	}
}
