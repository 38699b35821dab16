package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-telegram/bot/models"
)

// The Bot API calls of the commands that run beside the daemon: gatewayd
// init and doctor check a token (getMe), and init reads the updates that
// tell it the operator's user id. They go through the adapter's own
// request code, so the token stays out of every error here too.

// ErrTokenRefused is wrapped by CheckToken's error when the Bot API
// answered and refused the token (rather than not answering).
var ErrTokenRefused = errors.New("telegram: token refused")

// BotInfo is the bot a token belongs to.
type BotInfo struct {
	ID       int64
	Username string // without "@"
}

// maxCheckAnswer bounds what getMe's or init's getUpdates' answer may be.
const maxCheckAnswer = 1 << 20

// CheckToken asks the Bot API at apiURL (DefaultAPIURL when "") who token
// is. Its errors name the method's URL with <token> in the token's place:
// "URL answered STATUS DESCRIPTION" wrapping ErrTokenRefused, or
// "URL: CAUSE" when the API did not answer.
func CheckToken(ctx context.Context, client *http.Client, apiURL, token string) (BotInfo, error) {
	var me models.User
	if err := (API{URL: apiURL, Token: token, Client: client}).call(ctx, "getMe", struct{}{}, &me); err != nil {
		return BotInfo{}, err
	}
	return BotInfo{ID: me.ID, Username: me.Username}, nil
}

// API calls the Bot API with one token outside an adapter.
type API struct {
	URL    string // DefaultAPIURL when ""
	Token  string
	Client *http.Client
}

// Updates long-polls getUpdates for messages from offset (-1: only the
// newest, which makes Telegram forget the older ones), waiting up to
// timeout. Errors are CheckToken's.
func (a API) Updates(ctx context.Context, offset int64, timeout time.Duration) ([]*models.Update, error) {
	params := map[string]any{"timeout": int(timeout / time.Second), "allowed_updates": []string{"message"}}
	if offset != 0 {
		params["offset"] = offset
	}
	var updates []*models.Update
	err := a.call(ctx, "getUpdates", params, &updates)
	return updates, err
}

// refusedError is an answer that is not ok; it wraps ErrTokenRefused.
type refusedError struct {
	shown       string
	status      int
	description string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s answered %d %s", e.shown, e.status, e.description)
}

func (e *refusedError) Unwrap() error { return ErrTokenRefused }

func (a API) call(ctx context.Context, method string, params, dest any) error {
	base := a.URL
	if base == "" {
		base = DefaultAPIURL
	}
	shown := base + "/bot<token>/" + method
	status, raw, err := postJSON(ctx, a.Client, base, a.Token, method, params, maxCheckAnswer)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is shown already, without the token
		}
		return fmt.Errorf("%s: %s", shown, redact(err.Error(), a.Token))
	}
	var r apiReply
	decodeErr := json.Unmarshal(raw, &r)
	switch {
	case status != http.StatusOK || !r.OK:
		return &refusedError{shown: shown, status: status, description: redact(r.Description, a.Token)}
	case decodeErr != nil:
		return fmt.Errorf("%s: the answer is not JSON", shown)
	}
	if err := json.Unmarshal(r.Result, dest); err != nil {
		return fmt.Errorf("%s: unexpected result: %v", shown, err)
	}
	return nil
}
