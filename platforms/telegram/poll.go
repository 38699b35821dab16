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
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/backoff"
)

// poller runs the getUpdates long-poll loop.
//
// Why not bot.Start: go-telegram/bot's poller stores an update's id as
// "last seen" the moment it pushes the update into its channel, and its
// next getUpdates call (offset = last+1) confirms it to Telegram while our
// handler may still be running or may have failed. A kill -9 at that point
// loses the message for good. Here the offset passed to getUpdates only
// moves past an update after gateway.Sink.Deliver returned nil for it (the
// gateway committed it), and the same offset is persisted in the cursor
// store, so a crash can only cause a redelivery, which the gateway
// recognises as a duplicate by its message id. The library is still used
// for every other method; getUpdates is the one method it keeps private.
type poller struct {
	a *Adapter
	// saved is the offset last persisted and savedAt when (poll loop only).
	saved   int64
	savedAt time.Time
	// cursor is where the offset goes: Config.Cursor, or the one the
	// PollGate handed over for this election. deposed is set when it
	// refused a write because another node polls now (ErrNotPoller).
	cursor  CursorStore
	deposed bool
}

// cursorSaveInterval spaces the cursor writes (each a durable commit):
// under load one per batch was a commit per message. A cursor older than
// Telegram's own offset costs nothing: getUpdates with a lower offset
// returns only what Telegram still holds, so after a crash at most the
// updates of the last interval come again and the gateway drops them as
// duplicates. The loop saves the latest offset when it stops.
const cursorSaveInterval = time.Second

func newPoller(a *Adapter) *poller { return &poller{a: a} }

type updatesResponse struct {
	OK          bool             `json:"ok"`
	Result      []*models.Update `json:"result"`
	ErrorCode   int              `json:"error_code"`
	Description string           `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// allowedUpdates limits what Telegram sends us to what we handle.
var allowedUpdates = []string{"message", "edited_message", "callback_query"}

func (p *poller) run(ctx context.Context, sink gateway.Sink) error {
	gate := p.a.cfg.PollGate
	if gate == nil {
		p.cursor = p.a.cfg.Cursor
		return p.poll(ctx, sink)
	}
	for ctx.Err() == nil {
		held, cursor, err := gate(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("telegram: poller gate: %w", err)
		}
		p.cursor, p.deposed = cursor, false
		if p.cursor == nil {
			p.cursor = p.a.cfg.Cursor
		}
		p.a.log.Info("telegram: elected poller")
		// The offset is read again on every election: the previous
		// poller, on another node, moved it on.
		if err := p.poll(held, sink); err != nil {
			return err
		}
		p.a.log.Info("telegram: no longer the poller")
	}
	return nil
}

// poll runs getUpdates until ctx ends.
func (p *poller) poll(ctx context.Context, sink gateway.Sink) error {
	offset, err := p.loadOffset(ctx)
	if err != nil {
		return err
	}
	p.a.log.Info("telegram: polling", zap.Int64("offset", offset))
	p.saved = offset
	defer func() { p.flushOffset(ctx, offset) }()
	pollDelays := backoff.New(p.a.cfg.RetryBackoff, maxRetryBackoff)
	deliverDelays := backoff.New(p.a.cfg.RetryBackoff, maxRetryBackoff)
	for ctx.Err() == nil && !p.deposed {
		updates, err := p.fetch(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if rejectsToken(err) {
				return p.a.tokenRejected("getUpdates", err)
			}
			if errors.Is(err, bot.ErrorConflict) {
				// A webhook was set meanwhile (or another poller runs):
				// removing the webhook is the part we can fix.
				_ = p.a.removeWebhook(ctx)
			}
			p.pause(ctx, "getUpdates failed", err, pollDelays)
			continue
		}
		pollDelays.Reset()
		confirmed := offset
		for _, u := range updates {
			if u == nil || u.ID < offset {
				continue // already handled: Telegram resent a confirmed update
			}
			if err := p.a.handleUpdate(ctx, sink, u); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				// Not confirmed: the next getUpdates uses the same
				// offset, so Telegram hands this update out again.
				p.pause(ctx, "delivery failed; update will be fetched again", err, deliverDelays)
				break
			}
			deliverDelays.Reset()
			offset = u.ID + 1
		}
		// Once per batch at most, not per update: each save is a durable
		// commit, and Telegram learns the offset only with the next poll
		// anyway. A crash re-fetches a few updates, which the gateway drops
		// as duplicates.
		if offset != confirmed && p.a.now().Sub(p.savedAt) >= cursorSaveInterval {
			p.saveOffset(ctx, offset)
		}
	}
	return nil
}

// pause logs err and waits the next delay, or longer when Telegram says
// so (retry_after).
func (p *poller) pause(ctx context.Context, msg string, err error, delays *backoff.Backoff) {
	wait := max(delays.Next(), retryAfter(err))
	p.a.log.Warn("telegram: "+msg, zap.Duration("retry_in", wait), zap.Error(err))
	backoff.Sleep(ctx, wait)
}

// loadOffset reads the persisted offset; a missing cursor starts at 0
// (everything Telegram still holds). A store failure is retried, never
// guessed around, because starting from the wrong place would be silent.
func (p *poller) loadOffset(ctx context.Context) (int64, error) {
	var offset int64
	err := p.a.retry(ctx, "load cursor", func(ctx context.Context) error {
		v, ok, err := p.cursor.Cursor(ctx, CursorName)
		if err != nil || !ok {
			return err
		}
		n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if perr != nil {
			p.a.log.Error("telegram: stored offset is not a number; starting from Telegram's own offset",
				zap.String("cursor", v))
			return nil
		}
		offset = n
		return nil
	})
	return offset, err
}

func (p *poller) saveOffset(ctx context.Context, offset int64) {
	p.savedAt = p.a.now()
	err := p.cursor.SetCursor(ctx, CursorName, strconv.FormatInt(offset, 10))
	if errors.Is(err, ErrNotPoller) {
		// Another node polls now and owns the offset: stop, and leave
		// these updates to it (recorded ones are duplicates it drops).
		p.deposed = true
		p.a.log.Warn("telegram: offset write refused, no longer the poller", zap.Int64("offset", offset), zap.Error(err))
		return
	}
	if err != nil && ctx.Err() == nil {
		// Telegram still gets the offset with the next poll; after a restart
		// the older cursor only causes duplicates, which the gateway drops.
		p.a.log.Warn("telegram: could not persist update offset", zap.Int64("offset", offset), zap.Error(err))
		return
	}
	p.saved = offset
}

// flushOffsetTimeout bounds the last cursor write when polling stops.
const flushOffsetTimeout = 5 * time.Second

// flushOffset persists the latest offset when the loop ends (usually on
// shutdown, when ctx is already cancelled), if a save was skipped.
func (p *poller) flushOffset(ctx context.Context, offset int64) {
	if offset == p.saved || p.deposed {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushOffsetTimeout)
	defer cancel()
	p.saveOffset(fctx, offset)
}

// fetch calls getUpdates directly (the library does not export it). The
// token is part of the URL, so errors are stripped of it.
func (p *poller) fetch(ctx context.Context, offset int64) ([]*models.Update, error) {
	body, err := json.Marshal(map[string]any{
		"offset":          offset,
		"timeout":         int(p.a.cfg.PollTimeout / time.Second),
		"allowed_updates": allowedUpdates,
	})
	if err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: %w", err)
	}
	u := p.a.cfg.APIURL + "/bot" + p.a.cfg.Token + "/getUpdates"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: %s", redact(err.Error(), p.a.cfg.Token))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.a.cfg.HTTPClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact(ue.URL, p.a.cfg.Token)
		}
		return nil, fmt.Errorf("telegram: getUpdates: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: read: %w", err)
	}
	var r updatesResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("telegram: getUpdates: HTTP %d: decode: %w", resp.StatusCode, err)
	}
	if !r.OK {
		return nil, apiError(r.ErrorCode, r.Description, r.Parameters.RetryAfter)
	}
	return r.Result, nil
}

// apiError maps a failed Bot API answer to the library's error values, so
// one classifier serves both our getUpdates and the library's methods.
func apiError(code int, desc string, retryAfterSec int) error {
	switch code {
	case http.StatusTooManyRequests:
		return &bot.TooManyRequestsError{Message: "too many requests, " + desc, RetryAfter: retryAfterSec}
	case http.StatusUnauthorized:
		return fmt.Errorf("telegram: getUpdates: %w, %s", bot.ErrorUnauthorized, desc)
	case http.StatusForbidden:
		return fmt.Errorf("telegram: getUpdates: %w, %s", bot.ErrorForbidden, desc)
	case http.StatusNotFound:
		return fmt.Errorf("telegram: getUpdates: %w, %s", bot.ErrorNotFound, desc)
	case http.StatusConflict:
		return fmt.Errorf("telegram: getUpdates: %w, %s", bot.ErrorConflict, desc)
	case http.StatusBadRequest:
		return fmt.Errorf("telegram: getUpdates: %w, %s", bot.ErrorBadRequest, desc)
	}
	return fmt.Errorf("telegram: getUpdates: error %d: %s", code, desc)
}

func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "***")
}

// retryAfter extracts Telegram's retry_after from err, or 0.
func retryAfter(err error) time.Duration {
	var tm *bot.TooManyRequestsError
	if errors.As(err, &tm) && tm.RetryAfter > 0 {
		return time.Duration(tm.RetryAfter) * time.Second
	}
	return 0
}
