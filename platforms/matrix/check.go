package matrix

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"
)

// The client-server calls of the commands that run beside the daemon:
// gatewayd init and doctor check a token (whoami), and init logs in with a
// password for one. They go through mautrix as the adapter does. Errors
// name the key at fault and the URL asked, never a token or a password.

// ErrTokenRefused is wrapped by CheckToken's error when the homeserver
// answered and refused the token (401 or 403), rather than not answering.
var ErrTokenRefused = errors.New("matrix: token refused")

// ErrLoginRefused is wrapped by Login's error when the homeserver refused
// the user or the password.
var ErrLoginRefused = errors.New("matrix: login refused")

// ErrNoPasswordLogin is wrapped by Login's error when the homeserver does
// not offer m.login.password (one behind an OIDC provider, such as MAS):
// a token made in a client is the way in then.
var ErrNoPasswordLogin = errors.New("matrix: the homeserver offers no password login")

// Whoami is the account and device a token belongs to.
type Whoami struct{ UserID, DeviceID string }

// loginDeviceName is the device a login creates, as the user's session
// list shows it.
const loginDeviceName = "gatewayd"

// CheckToken asks the homeserver whom token belongs to
// (GET /_matrix/client/v3/account/whoami).
func CheckToken(ctx context.Context, client *http.Client, homeserver, token string) (Whoami, error) {
	cli, err := checkClient(client, homeserver, token)
	if err != nil {
		return Whoami{}, err
	}
	shown := cli.BuildClientURL("v3", "account", "whoami")
	res, err := cli.Whoami(ctx)
	if err != nil {
		if refused(err) {
			return Whoami{}, &refusedError{key: "matrix.access_token", url: shown, detail: answer(err, token), sentinel: ErrTokenRefused}
		}
		return Whoami{}, fmt.Errorf("matrix: %s: %s", shown, answer(err, token))
	}
	return Whoami{UserID: res.UserID.String(), DeviceID: res.DeviceID.String()}, nil
}

// Login logs user (a localpart or a full id) in with password and returns
// the new device's access token: gatewayd init stores it, never the
// password. No refresh token is asked for: the daemon keeps one token.
func Login(ctx context.Context, client *http.Client, homeserver, user, password string) (string, error) {
	cli, err := checkClient(client, homeserver, "")
	if err != nil {
		return "", err
	}
	flowsURL := cli.BuildClientURL("v3", "login")
	flows, err := cli.GetLoginFlows(ctx)
	if err != nil {
		return "", fmt.Errorf("matrix: %s: %s", flowsURL, answer(err, password))
	}
	if !flows.HasFlow(mautrix.AuthTypePassword) {
		return "", fmt.Errorf("%w (%s lists no m.login.password): make an access token in a client and give it instead", ErrNoPasswordLogin, flowsURL)
	}
	res, err := cli.Login(ctx, &mautrix.ReqLogin{
		Type:                     mautrix.AuthTypePassword,
		Identifier:               mautrix.UserIdentifier{Type: mautrix.IdentifierTypeUser, User: user},
		Password:                 password,
		InitialDeviceDisplayName: loginDeviceName,
	})
	switch {
	case err != nil && refused(err):
		return "", &refusedError{key: "the password login", url: flowsURL, detail: answer(err, password), sentinel: ErrLoginRefused}
	case err != nil:
		return "", fmt.Errorf("matrix: %s: %s", flowsURL, answer(err, password))
	case res.AccessToken == "":
		return "", fmt.Errorf("matrix: %s answered no access token", flowsURL)
	}
	return res.AccessToken, nil
}

// checkClient is a mautrix client for the checks: one attempt per call
// (mautrix retries nothing by default), the adapter's URL rules.
func checkClient(client *http.Client, homeserver, token string) (*mautrix.Client, error) {
	u, err := url.Parse(strings.TrimSpace(homeserver))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: matrix.homeserver %q is not an http(s) URL", ErrConfig, homeserver)
	}
	cli, err := mautrix.NewClient(strings.TrimRight(u.String(), "/"), id.UserID(""), token)
	if err != nil {
		return nil, fmt.Errorf("%w: matrix.homeserver: %v", ErrConfig, err)
	}
	if client != nil {
		cli.Client = client
	}
	cli.UserAgent = "gatewayd " + mautrix.DefaultUserAgent
	return cli, nil
}

// refused reports an answer that refuses the credentials: 401 or 403.
func refused(err error) bool {
	var he mautrix.HTTPError
	return errors.As(err, &he) && (he.IsStatus(http.StatusUnauthorized) || he.IsStatus(http.StatusForbidden))
}

// answer words a failed call: the server's errcode and message, or the
// transport's cause without the URL (the caller shows it), with secret
// taken out of whatever the server or the transport said.
func answer(err error, secret string) string {
	var (
		he mautrix.HTTPError
		ue *url.Error
	)
	text := err.Error()
	switch {
	case errors.As(err, &ue):
		text = ue.Err.Error()
	case errors.As(err, &he) && he.RespError != nil && he.Response != nil:
		text = fmt.Sprintf("%d %s: %s", he.Response.StatusCode, he.RespError.ErrCode, he.RespError.Err)
	case errors.As(err, &he) && he.Response != nil:
		text = fmt.Sprintf("%d", he.Response.StatusCode)
	}
	if secret != "" {
		text = strings.ReplaceAll(text, secret, "<redacted>")
	}
	return text
}

// refusedError is the homeserver refusing credentials; it wraps sentinel
// (ErrTokenRefused or ErrLoginRefused). key names what was refused: the
// config key of a token, or the login.
type refusedError struct {
	key, url, detail string
	sentinel         error
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("matrix: %s refused: %s answered %s", e.key, e.url, e.detail)
}

func (e *refusedError) Unwrap() error { return e.sentinel }
