package slack_test

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

	"github.com/gorilla/websocket"

	"github.com/gatewayd/gatewayd/platforms/slack"
)

const (
	checkBotToken = "xoxb-CHECK-bot-secret"
	checkAppToken = "xapp-CHECK-app-secret"
	checkTicket   = "TICKET-secret"
)

// checkFake answers auth.test and apps.connections.open as Slack does
// (HTTP 200 with "ok", or "ok": false and an error code) and serves the
// Socket Mode websocket the latter points at, whose first message is
// hello (or, with socketOff, the disconnect of an app without Socket Mode).
type checkFake struct {
	*httptest.Server
	socketOff atomic.Bool
	rateLimit atomic.Bool
	sockets   atomic.Int32 // connections that reached the websocket
	closed    chan struct{}
}

func newCheckFake(t *testing.T) *checkFake {
	t.Helper()
	f := &checkFake{closed: make(chan struct{}, 4)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/auth.test", func(w http.ResponseWriter, r *http.Request) {
		if f.rateLimit.Load() {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		switch tok := r.PostFormValue("token"); {
		case tok == checkBotToken:
			checkReply(w, map[string]any{"ok": true, "url": "https://acme.slack.com/", "team": "Acme", "user": "codex",
				"team_id": "T0001", "user_id": "U0BOT", "bot_id": "B0001"})
		case tok == "":
			checkReply(w, map[string]any{"ok": false, "error": "not_authed"})
		default:
			checkReply(w, map[string]any{"ok": false, "error": "invalid_auth"})
		}
	})
	mux.HandleFunc("POST /api/apps.connections.open", func(w http.ResponseWriter, r *http.Request) {
		switch auth := r.Header.Get("Authorization"); {
		case auth == "Bearer "+checkAppToken:
			checkReply(w, map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(f.URL, "http") + "/link/?ticket=" + checkTicket + "&app_id=A0APP"})
		case strings.HasPrefix(auth, "Bearer xoxb-"):
			checkReply(w, map[string]any{"ok": false, "error": "not_allowed_token_type"})
		case auth == "Bearer xapp-no-scope":
			checkReply(w, map[string]any{"ok": false, "error": "missing_scope", "needed": "connections:write", "provided": ""})
		default:
			checkReply(w, map[string]any{"ok": false, "error": "invalid_auth"})
		}
	})
	upgrader := websocket.Upgrader{}
	mux.HandleFunc("GET /link/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("ticket") != checkTicket {
			http.Error(w, "bad ticket", http.StatusUnauthorized)
			return
		}
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		f.sockets.Add(1)
		first := map[string]any{"type": "hello", "num_connections": 2,
			"debug_info": map[string]any{"host": "applink-1"}, "connection_info": map[string]any{"app_id": "A0APP"}}
		if f.socketOff.Load() {
			first = map[string]any{"type": "disconnect", "reason": "link_disabled", "debug_info": map[string]any{"host": "applink-1"}}
		}
		if err := conn.WriteJSON(first); err != nil {
			return
		}
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure {
					f.closed <- struct{}{}
				}
				return
			}
		}
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func checkReply(w http.ResponseWriter, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(body)
}

func (f *checkFake) api() string { return f.URL + "/api" } // without the slash: the checks add it

// noSecret fails when err's text holds a token or the socket's ticket.
func checkNoSecret(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{"CHECK-bot-secret", "CHECK-app-secret", checkTicket, "xapp-no-scope"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error shows a secret: %v", err)
		}
	}
}

func TestCheckBotToken(t *testing.T) {
	f := newCheckFake(t)
	client := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()

	bot, err := slack.CheckBotToken(ctx, client, f.api(), checkBotToken)
	if err != nil || bot != (slack.BotInfo{UserID: "U0BOT", User: "codex", TeamID: "T0001", Team: "Acme"}) {
		t.Fatalf("good token: %+v, %v", bot, err)
	}

	_, err = slack.CheckBotToken(ctx, client, f.api(), "xoxb-CHECK-bot-secret-wrong")
	want := "slack: slack.bot_token refused: " + f.URL + "/api/auth.test answered invalid_auth"
	if !errors.Is(err, slack.ErrTokenRefused) || err.Error() != want {
		t.Errorf("wrong token: %v\nwant %s", err, want)
	}
	checkNoSecret(t, err)

	f.rateLimit.Store(true)
	_, err = slack.CheckBotToken(ctx, client, f.api(), checkBotToken)
	if err == nil || errors.Is(err, slack.ErrTokenRefused) || !strings.Contains(err.Error(), "rate limited, retry after 7s") {
		t.Errorf("429: %v, want a rate limit that is no refusal", err)
	}
	f.rateLimit.Store(false)

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	_, err = slack.CheckBotToken(ctx, client, down.URL+"/api/", checkBotToken)
	if err == nil || errors.Is(err, slack.ErrTokenRefused) || !strings.HasPrefix(err.Error(), "slack: "+down.URL+"/api/auth.test: ") {
		t.Errorf("no server: %v, want a transport error naming the URL", err)
	}
	checkNoSecret(t, err)

	_, err = slack.CheckBotToken(ctx, client, "slack.com/api", checkBotToken)
	if err == nil || !strings.Contains(err.Error(), "slack.api_url") {
		t.Errorf("relative URL: %v, want slack.api_url named", err)
	}
}

func TestCheckAppToken(t *testing.T) {
	f := newCheckFake(t)
	client := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()

	if err := slack.CheckAppToken(ctx, client, f.api(), checkAppToken); err != nil {
		t.Fatalf("good token: %v", err)
	}
	if n := f.sockets.Load(); n != 0 {
		t.Errorf("CheckAppToken opened %d socket(s), want none", n)
	}
	tests := []struct {
		name, token, want string
	}{
		{"bot token in its place", checkBotToken, "answered not_allowed_token_type"},
		{"without connections:write", "xapp-no-scope", "answered missing_scope (needs connections:write)"},
		{"revoked", "xapp-CHECK-app-secret-old", "answered invalid_auth"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := slack.CheckAppToken(ctx, client, f.api(), tc.token)
			if !errors.Is(err, slack.ErrTokenRefused) || !strings.HasPrefix(err.Error(), "slack: slack.app_token refused: ") ||
				!strings.HasSuffix(err.Error(), tc.want) {
				t.Errorf("got %v, want a refusal naming slack.app_token ending %q", err, tc.want)
			}
			checkNoSecret(t, err)
		})
	}
}

func TestCheckSocket(t *testing.T) {
	f := newCheckFake(t)
	client := &http.Client{Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	info, err := slack.CheckSocketInfo(ctx, client, f.api(), checkAppToken)
	if err != nil || info != (slack.SocketInfo{AppID: "A0APP", Connections: 2}) {
		t.Fatalf("hello: %+v, %v", info, err)
	}
	select {
	case <-f.closed: // the check closed the socket cleanly, so Slack frees the slot
	case <-ctx.Done():
		t.Fatal("the check left the socket open")
	}

	f.socketOff.Store(true)
	err = slack.CheckSocket(ctx, client, f.api(), checkAppToken)
	if err == nil || errors.Is(err, slack.ErrTokenRefused) || !strings.Contains(err.Error(), "Socket Mode is off in the app's settings") {
		t.Errorf("socket mode off: %v", err)
	}
	checkNoSecret(t, err)
	if err != nil && !strings.Contains(err.Error(), "socket ws://127.0.0.1:") {
		t.Errorf("the error does not name the socket's host: %v", err)
	}

	err = slack.CheckSocket(ctx, client, f.api(), "xapp-CHECK-app-secret-old")
	if !errors.Is(err, slack.ErrTokenRefused) || !strings.Contains(err.Error(), "slack.app_token") {
		t.Errorf("refused app token: %v", err)
	}
	checkNoSecret(t, err)
}
