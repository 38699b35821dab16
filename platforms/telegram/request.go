package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-telegram/bot"
)

// The text methods of every reply (sendMessage, editMessageText,
// sendChatAction) are sent here as one JSON body rather than through
// go-telegram/bot, which encodes every request as multipart form data
// streamed through a pipe from its own goroutine (so without a length).
// Errors are the library's own values and texts, so classify and the
// retry logic see no difference.

// apiReply is the Bot API's answer envelope.
type apiReply struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	Description string          `json:"description"`
	ErrorCode   int             `json:"error_code"`
	Parameters  struct {
		RetryAfter      int `json:"retry_after"`
		MigrateToChatID int `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// callJSON posts params as JSON to method and decodes the result into dest
// (nil: ignore it). The token is in the URL, so it is stripped from errors.
func (a *Adapter) callJSON(ctx context.Context, method string, params, dest any) error {
	_, raw, err := postJSON(ctx, a.cfg.HTTPClient, a.cfg.APIURL, a.cfg.Token, method, params, 0)
	if err != nil {
		return err
	}
	var r apiReply
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("error decode response body for method %s, %s, %w", method, raw, err)
	}
	if !r.OK {
		return replyError(method, &r)
	}
	if dest != nil {
		if err := json.Unmarshal(r.Result, dest); err != nil {
			return fmt.Errorf("error decode response result for method %s, %w", method, err)
		}
	}
	return nil
}

// postJSON posts params as JSON to the Bot API's method and returns the
// HTTP status and the body (at most limit bytes when limit > 0). The token
// is in the URL, so it is stripped from errors.
func postJSON(ctx context.Context, client *http.Client, apiURL, token, method string, params any, limit int64) (int, []byte, error) {
	body, err := json.Marshal(params)
	if err != nil {
		return 0, nil, fmt.Errorf("error encode request for method %s, %w", method, err)
	}
	u := apiURL + "/bot" + token + "/" + method
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("error create request for method %s, %s", method, redact(err.Error(), token))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = strings.ReplaceAll(ue.URL, token, "***")
		}
		return 0, nil, fmt.Errorf("error do request for method %s, %w", method, err)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if limit > 0 {
		r = io.LimitReader(r, limit)
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("error read response body for method %s, %w", method, err)
	}
	return resp.StatusCode, raw, nil
}

// replyError maps a failed answer to go-telegram/bot's error for it.
func replyError(method string, r *apiReply) error {
	switch r.ErrorCode {
	case http.StatusForbidden:
		return fmt.Errorf("%w, %s", bot.ErrorForbidden, r.Description)
	case http.StatusBadRequest:
		if r.Parameters.MigrateToChatID != 0 {
			return &bot.MigrateError{Message: fmt.Sprintf("%s: %s", bot.ErrorBadRequest, r.Description),
				MigrateToChatID: r.Parameters.MigrateToChatID}
		}
		return fmt.Errorf("%w, %s", bot.ErrorBadRequest, r.Description)
	case http.StatusUnauthorized:
		return fmt.Errorf("%w, %s", bot.ErrorUnauthorized, r.Description)
	case http.StatusNotFound:
		return fmt.Errorf("%w, %s", bot.ErrorNotFound, r.Description)
	case http.StatusConflict:
		return fmt.Errorf("%w, %s", bot.ErrorConflict, r.Description)
	case http.StatusTooManyRequests:
		return &bot.TooManyRequestsError{Message: fmt.Sprintf("%s, %s", bot.ErrorTooManyRequests, r.Description),
			RetryAfter: r.Parameters.RetryAfter}
	default:
		return fmt.Errorf("error response from telegram for method %s, %d %s", method, r.ErrorCode, r.Description)
	}
}

// sentMessage is the part of sendMessage's result the adapter reads: the
// whole models.Message (chat, sender, entities) is decoded for nothing.
type sentMessage struct {
	ID int `json:"message_id"`
}

func (a *Adapter) sendMessage(ctx context.Context, p *bot.SendMessageParams) (sentMessage, error) {
	var m sentMessage
	if err := a.callJSON(ctx, "sendMessage", p, &m); err != nil {
		return sentMessage{}, err
	}
	return m, nil
}

func (a *Adapter) editMessageText(ctx context.Context, p *bot.EditMessageTextParams) error {
	return a.callJSON(ctx, "editMessageText", p, nil)
}

func (a *Adapter) sendChatAction(ctx context.Context, p *bot.SendChatActionParams) error {
	return a.callJSON(ctx, "sendChatAction", p, nil)
}
