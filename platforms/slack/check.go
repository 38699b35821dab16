package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
)

// The Web API calls of the commands that run beside the daemon: gatewayd
// init and doctor check the two tokens (auth.test, apps.connections.open)
// and doctor opens one Socket Mode connection. They go through slack-go as
// the adapter does. Errors name the key whose value is at fault and the
// URL asked, never a token, nor the socket's URL (its ticket admits one
// connection).

// ErrTokenRefused is wrapped by the checks' errors when Slack answered and
// refused the token (rather than not answering, or asking to wait).
var ErrTokenRefused = errors.New("slack: token refused")

// BotInfo is the bot and workspace a bot token belongs to (auth.test).
type BotInfo struct {
	UserID, User, TeamID, Team string
}

// SocketInfo is what Slack's hello on a Socket Mode connection says.
type SocketInfo struct {
	AppID       string // the app the app-level token belongs to (A…)
	Connections int    // the app's open connections, this one included
}

// transientErrors are Slack "ok": false answers that say nothing about the
// token: try again later.
var transientErrors = map[string]bool{
	"ratelimited": true, "fatal_error": true, "internal_error": true,
	"request_timeout": true, "service_unavailable": true,
}

// socketHelloTimeout bounds the wait for hello when ctx has no deadline.
const socketHelloTimeout = 30 * time.Second

// CheckBotToken asks Slack (apiURL, DefaultAPIURL when "") whom token
// belongs to, with auth.test.
func CheckBotToken(ctx context.Context, client *http.Client, apiURL, token string) (BotInfo, error) {
	api, base, err := checkClient(client, apiURL, token, "")
	if err != nil {
		return BotInfo{}, err
	}
	res, err := api.AuthTestContext(ctx)
	if err != nil {
		return BotInfo{}, checkError("slack.bot_token", base+"auth.test", err, token)
	}
	return BotInfo{UserID: res.UserID, User: res.User, TeamID: res.TeamID, Team: res.Team}, nil
}

// CheckAppToken asks Slack for a Socket Mode connection with the app-level
// token (apps.connections.open) and does not open it: Slack accepts the
// token only with connections:write.
func CheckAppToken(ctx context.Context, client *http.Client, apiURL, token string) error {
	_, err := openSocket(ctx, client, apiURL, token)
	return err
}

// CheckSocket opens one Socket Mode connection, reads Slack's hello and
// closes it: what the adapter needs beyond the tokens (Socket Mode enabled
// in the app's settings, the websocket reachable from here).
func CheckSocket(ctx context.Context, client *http.Client, apiURL, appToken string) error {
	_, err := CheckSocketInfo(ctx, client, apiURL, appToken)
	return err
}

// CheckSocketInfo is CheckSocket that also returns what hello said.
//
// While the daemon runs, Slack may hand this connection an event; it is
// never acknowledged, so Slack sends it again on the daemon's connection.
func CheckSocketInfo(ctx context.Context, client *http.Client, apiURL, appToken string) (SocketInfo, error) {
	wsURL, err := openSocket(ctx, client, apiURL, appToken)
	if err != nil {
		return SocketInfo{}, err
	}
	shown := socketOrigin(wsURL)
	conn, resp, err := socketDialer(client).DialContext(ctx, wsURL, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return SocketInfo{}, fmt.Errorf("slack: socket %s: %s", shown, scrub(err.Error(), wsURL, appToken))
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(socketHelloTimeout)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
	defer stop()
	if err := conn.SetReadDeadline(deadline); err != nil {
		return SocketInfo{}, fmt.Errorf("slack: socket %s: %w", shown, err)
	}
	info, err := readHello(conn)
	if err != nil {
		return SocketInfo{}, fmt.Errorf("slack: socket %s: %s", shown, scrub(err.Error(), wsURL, appToken))
	}
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
		time.Now().Add(time.Second))
	return info, nil
}

// readHello reads the first message: hello, or the disconnect Slack sends
// when Socket Mode is off for the app (reason link_disabled).
func readHello(conn *websocket.Conn) (SocketInfo, error) {
	_, data, err := conn.ReadMessage()
	if err != nil {
		return SocketInfo{}, fmt.Errorf("no hello: %w", err)
	}
	var msg struct {
		Type           string `json:"type"`
		Reason         string `json:"reason"`
		NumConnections int    `json:"num_connections"`
		ConnectionInfo struct {
			AppID string `json:"app_id"`
		} `json:"connection_info"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		return SocketInfo{}, fmt.Errorf("first message is not JSON: %w", err)
	}
	switch msg.Type {
	case "hello":
		return SocketInfo{AppID: msg.ConnectionInfo.AppID, Connections: msg.NumConnections}, nil
	case "disconnect":
		if msg.Reason == "link_disabled" {
			return SocketInfo{}, errors.New("closed at once (link_disabled): Socket Mode is off in the app's settings")
		}
		return SocketInfo{}, fmt.Errorf("closed at once (%s)", msg.Reason)
	}
	return SocketInfo{}, fmt.Errorf("first message is %q, not hello", msg.Type)
}

// openSocket calls apps.connections.open and returns the websocket URL.
func openSocket(ctx context.Context, client *http.Client, apiURL, appToken string) (string, error) {
	api, base, err := checkClient(client, apiURL, "", appToken)
	if err != nil {
		return "", err
	}
	_, wsURL, err := api.StartSocketModeContext(ctx)
	if err != nil {
		return "", checkError("slack.app_token", base+"apps.connections.open", err, appToken)
	}
	if u, perr := url.Parse(wsURL); perr != nil || (u.Scheme != "wss" && u.Scheme != "ws") || u.Host == "" {
		return "", fmt.Errorf("slack: %sapps.connections.open answered no websocket URL", base)
	}
	return wsURL, nil
}

// checkClient is a slack-go client for the checks, without retries (a 429
// is reported, not waited out) and with the adapter's URL rules.
func checkClient(client *http.Client, apiURL, botToken, appToken string) (*slack.Client, string, error) {
	base := apiURL
	if base == "" {
		base = DefaultAPIURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", fmt.Errorf("%w: slack.api_url %q is not an absolute http(s) URL", ErrConfig, apiURL)
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	if client == nil {
		client = httpClient(Config{})
	}
	opts := []slack.Option{slack.OptionAPIURL(base), slack.OptionHTTPClient(client)}
	if appToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(appToken))
	}
	return slack.New(botToken, opts...), base, nil
}

// checkError words a failed call: a refusal (Slack answered, and not with
// a reason to wait) names key; anything else names the URL only.
func checkError(key, method string, err error, token string) error {
	var (
		slackErr  slack.SlackErrorResponse
		statusErr slack.StatusCodeError
		rateErr   *slack.RateLimitedError
		urlErr    *url.Error
	)
	switch {
	case errors.As(err, &slackErr) && !transientErrors[slackErr.Err]:
		detail := slackErr.Err
		if slackErr.Needed != "" {
			detail += " (needs " + slackErr.Needed + ")"
		}
		return &refusedError{key: key, method: method, detail: scrub(detail, token)}
	case errors.As(err, &statusErr) && (statusErr.Code == http.StatusUnauthorized || statusErr.Code == http.StatusForbidden):
		return &refusedError{key: key, method: method, detail: statusErr.Status}
	case errors.As(err, &rateErr):
		return fmt.Errorf("slack: %s: rate limited, retry after %s", method, rateErr.RetryAfter)
	case errors.As(err, &urlErr):
		return fmt.Errorf("slack: %s: %s", method, scrub(urlErr.Err.Error(), token))
	}
	return fmt.Errorf("slack: %s: %s", method, scrub(err.Error(), token))
}

// refusedError is Slack refusing a token; it wraps ErrTokenRefused.
type refusedError struct {
	key, method, detail string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("slack: %s refused: %s answered %s", e.key, e.method, e.detail)
}

func (e *refusedError) Unwrap() error { return ErrTokenRefused }

// socketDialer dials as client would: its proxy and TLS settings when its
// transport is an *http.Transport.
func socketDialer(client *http.Client) *websocket.Dialer {
	d := &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: socketHelloTimeout}
	if client != nil {
		if t, ok := client.Transport.(*http.Transport); ok {
			d.Proxy, d.TLSClientConfig = t.Proxy, t.TLSClientConfig
		}
	}
	return d
}

// socketOrigin is the socket URL without its ticket: scheme and host.
func socketOrigin(wsURL string) string {
	u, err := url.Parse(wsURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host
}

// scrub keeps secrets (tokens, the socket's URL) out of text from
// elsewhere.
func scrub(text string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			text = strings.ReplaceAll(text, s, "<redacted>")
		}
	}
	return text
}
