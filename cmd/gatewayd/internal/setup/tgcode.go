package setup

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/go-telegram/bot/models"
)

// How `gatewayd init` learns whom to allow on Telegram: it
// shows a one-time code and takes the numeric id of whoever sends the bot
// exactly `/start CODE` after it was shown. Neither the first sender nor
// a display name proves anything: a stranger may have written first, an
// old message may still be queued, and a name is anyone's to choose.

// learnTelegramUser shows a one-time code and waits for `/start CODE` to
// the bot; it returns the sender's numeric id once the operator confirms
// it ("" when nothing arrived, the bot could not be read, or they said
// no: init then asks for ids).
func (c *initCmd) learnTelegramUser(ctx context.Context, tok, bot string) (string, error) {
	newCode := c.newCode
	if newCode == nil {
		newCode = oneTimeCode
	}
	code, err := newCode()
	if err != nil {
		return "", fmt.Errorf("init: one-time code: %w", err)
	}
	offset, err := c.skipBacklog(ctx, tok)
	if err != nil {
		fmt.Fprintf(c.std.Err, "%v\n", err)
		return "", nil
	}
	shownAt := time.Now()
	fmt.Fprintf(c.std.Out, "Send this message to %s now (waiting up to %s):\n\n    /start %s\n\n", bot, initWaitForMessage, code)
	sender, err := c.waitForCode(ctx, tok, offset, code, shownAt)
	switch {
	case err != nil:
		fmt.Fprintf(c.std.Err, "%v\n", err)
		return "", nil
	case sender == nil:
		fmt.Fprintf(c.std.Out, "No /start %s arrived.\n", code)
		return "", nil
	}
	// No by default: allowing someone is the one answer that must be typed.
	ok, err := c.confirm(fmt.Sprintf("Allow %s? [y/N] ", senderLabel(sender)), false)
	if err != nil || !ok {
		return "", err
	}
	return strconv.FormatInt(sender.ID, 10), nil
}

// codeAlphabet leaves out what reads alike (0/O, 1/I/L).
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// oneTimeCode is 8 characters from crypto/rand: guessing it in the minute
// init waits is out of reach.
func oneTimeCode() (string, error) {
	b := make([]byte, 8)
	for i := range b {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(codeAlphabet))))
		if err != nil {
			return "", err
		}
		b[i] = codeAlphabet[n.Int64()]
	}
	return string(b), nil
}

// isStartCode says whether text is exactly `/start CODE`, or
// `/start@bot CODE` naming this bot.
func isStartCode(text, code, bot string) bool {
	cmd, arg, ok := strings.Cut(text, " ")
	if !ok || arg != code {
		return false
	}
	if cmd == "/start" {
		return true
	}
	name, ok := strings.CutPrefix(cmd, "/start@")
	return ok && bot != "" && strings.EqualFold(name, bot)
}

// getUpdates reads the bot's messages from offset; the token never
// appears in errors.
func (c *initCmd) getUpdates(ctx context.Context, tok string, offset int64, wait time.Duration) ([]*models.Update, error) {
	api := telegram.API{URL: c.opts.tgAPIURL, Token: tok, Client: c.http}
	updates, err := api.Updates(ctx, offset, wait)
	switch {
	case errors.Is(err, telegram.ErrTokenRefused):
		return nil, fmt.Errorf("init: telegram: %v (is another gatewayd polling this bot, or a webhook set?)", err)
	case err != nil:
		return nil, fmt.Errorf("init: telegram: %v", err)
	}
	return updates, nil
}

// skipBacklog returns the offset past every update already queued:
// offset -1 returns the newest and makes Telegram forget the older ones,
// so a message sent before the code was shown is never read.
func (c *initCmd) skipBacklog(ctx context.Context, tok string) (int64, error) {
	updates, err := c.getUpdates(ctx, tok, -1, 0)
	if err != nil {
		return 0, err
	}
	offset := int64(0)
	for _, u := range updates {
		offset = max(offset, u.ID+1)
	}
	return offset, nil
}

// waitForCode long-polls getUpdates from offset until a message sent
// since shownAt says exactly `/start CODE`, or the wait ends (nil). What
// it read is acknowledged, so the daemon does not answer it.
func (c *initCmd) waitForCode(ctx context.Context, tok string, offset int64, code string, shownAt time.Time) (*models.User, error) {
	deadline := time.Now().Add(initWaitForMessage)
	defer c.ackUpdates(ctx, tok, &offset)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		updates, err := c.getUpdates(ctx, tok, offset, min(left.Truncate(time.Second), 25*time.Second))
		if err != nil {
			return nil, err
		}
		for _, u := range updates {
			offset = max(offset, u.ID+1)
			if s := c.codeSender(u, code, shownAt); s != nil {
				return s, nil
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// codeSender is the sender of u when it is the code sent in time, else
// nil; a message that is not is told by its sender's id alone (the name
// is theirs to choose).
func (c *initCmd) codeSender(u *models.Update, code string, shownAt time.Time) *models.User {
	m := u.Message
	if m == nil || m.From == nil || m.From.IsBot {
		return nil
	}
	switch {
	case int64(m.Date) < shownAt.Unix(): // Telegram's dates are whole seconds
		fmt.Fprintf(c.std.Out, "Ignored a message from user %d sent before the code was shown.\n", m.From.ID)
	case !isStartCode(m.Text, code, c.tgBot):
		fmt.Fprintf(c.std.Out, "Ignored a message from user %d: it is not /start %s.\n", m.From.ID, code)
	default:
		return m.From
	}
	return nil
}

// ackUpdates confirms what was read up to *offset.
func (c *initCmd) ackUpdates(ctx context.Context, tok string, offset *int64) {
	if *offset == 0 {
		return
	}
	_, _ = c.getUpdates(ctx, tok, *offset, 0)
}
