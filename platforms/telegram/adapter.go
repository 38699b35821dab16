// Package telegram is the Telegram adapter of gatewayd: private chats,
// groups and forum topics become lanes, updates are long-polled and
// acknowledged to Telegram only after the gateway committed them, and
// replies are split at Telegram's 4096 UTF-16 code unit limit.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/backoff"
)

// PlatformName is the platform name used in addresses and message ids.
const PlatformName = "telegram"

// DefaultAPIURL is the official Bot API server.
const DefaultAPIURL = "https://api.telegram.org"

// CursorName is the cursor under which the next getUpdates offset is kept.
const CursorName = "telegram.offset"

const (
	defaultPollTimeout  = 30 * time.Second
	defaultRetryBackoff = time.Second
	maxRetryBackoff     = 30 * time.Second
	requestTimeout      = 30 * time.Second
)

// CursorStore persists the update offset; *store.Store satisfies it.
type CursorStore interface {
	Cursor(ctx context.Context, name string) (string, bool, error)
	SetCursor(ctx context.Context, name, value string) error
}

// Config configures an Adapter.
type Config struct {
	Token  string // bot token; never logged
	APIURL string // Bot API base URL; default DefaultAPIURL (a local Bot API server or a test fake)
	// AllowedUsers may talk to the bot anywhere; every member of an
	// AllowedChats chat may talk to it in that chat. Everyone else is ignored.
	AllowedUsers []int64
	AllowedChats []int64
	// FreeResponseChats lists "chat" or "chat:topic" where every message is
	// answered, not only those addressed to the bot.
	FreeResponseChats []string
	BotUsername       string        // without "@"; empty → asked with getMe
	Cursor            CursorStore   // required: where the update offset survives restarts
	PollTimeout       time.Duration // getUpdates long-poll timeout; default 30s, whole seconds
	RetryBackoff      time.Duration // first wait after a failed poll or delivery; default 1s
	HTTPClient        *http.Client  // optional; default one with a timeout above PollTimeout
	Logger            *zap.Logger
	Now               func() time.Time
	// Commands are the gateway's commands (gateway.Gateway.Commands); the
	// menu ones are the bot's command menu (setMyCommands).
	Commands []gateway.CommandInfo

	// PollGate, in cluster mode, blocks until this node is the one poller
	// (Telegram allows one getUpdates consumer per token) and returns a
	// context that ends when it no longer is, and the cursor store the
	// offset goes through meanwhile (nil: Cursor). That store's writes
	// carry the election's lease, so once another node is the poller they
	// fail with an error matching ErrNotPoller and the offset stays where
	// the new poller put it. Nil PollGate: always the poller.
	PollGate func(ctx context.Context) (context.Context, CursorStore, error)

	// DraftStreaming streams a private chat's preview as a native draft
	// (sendMessageDraft) instead of a message edited as it grows; groups
	// and forum topics keep the edited message, and so does a chat where
	// Telegram refuses drafts (draft.go).
	DraftStreaming bool
}

// ErrNotPoller is what a PollGate's cursor store returns for a write made
// after another node became the poller: this node stops polling and waits
// for the gate again.
var ErrNotPoller = errors.New("telegram: another node is the poller now")

// Adapter is the Telegram platform: the whole gateway.Platform and every
// optional capability but ProgressEditor (see the checks below).
type Adapter struct {
	cfg    Config
	log    *zap.Logger
	now    func() time.Time
	bot    *bot.Bot
	poller *poller

	ready     chan struct{}
	readyOnce sync.Once
	running   atomic.Bool

	mu          sync.RWMutex
	users       map[int64]bool
	chats       map[int64]bool
	free        map[string]bool
	botID       int64
	botUsername string

	unauth *unauthLog
	edits  *editCache
	drafts *draftBook
}

// Compile-time checks of everything the adapter implements.
var (
	_ gateway.Platform     = (*Adapter)(nil)
	_ gateway.Typer        = (*Adapter)(nil)
	_ gateway.Deleter      = (*Adapter)(nil)
	_ gateway.Renamer      = (*Adapter)(nil)
	_ gateway.ButtonSender = (*Adapter)(nil)
	_ gateway.ButtonEditor = (*Adapter)(nil)
	_ gateway.Authorizer   = (*Adapter)(nil)
)

// maxIdleConnsPerHost is how many Bot API connections stay open between
// requests. http.DefaultTransport keeps 2 per host, so a burst of typing
// indicators and replies to many chats dialled anew (on the real API with a
// TLS handshake) for all but two of them, every time.
const maxIdleConnsPerHost = 64

// newHTTPClient is the adapter's default client: the default transport
// with enough idle connections for a burst of concurrent requests.
func newHTTPClient(timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxIdleConnsPerHost
	t.MaxIdleConns = max(t.MaxIdleConns, maxIdleConnsPerHost)
	return &http.Client{Timeout: timeout, Transport: t}
}

// New validates cfg and builds an adapter. It does not touch the network;
// Run connects.
func New(cfg Config) (*Adapter, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("telegram: token is empty")
	}
	if cfg.Cursor == nil {
		return nil, errors.New("telegram: a cursor store is required")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = defaultPollTimeout
	}
	if cfg.PollTimeout < time.Second {
		cfg.PollTimeout = time.Second
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = defaultRetryBackoff
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = newHTTPClient(cfg.PollTimeout + requestTimeout)
	}
	a := &Adapter{
		cfg:         cfg,
		log:         cfg.Logger.With(zap.String("platform", PlatformName)),
		now:         cfg.Now,
		ready:       make(chan struct{}),
		botUsername: strings.TrimPrefix(cfg.BotUsername, "@"),
		unauth:      newUnauthLog(cfg.Now),
		edits:       newEditCache(),
		drafts:      newDraftBook(cfg.Now().UnixNano()),
	}
	b, err := bot.New(cfg.Token,
		bot.WithServerURL(cfg.APIURL),
		bot.WithSkipGetMe(),
		bot.WithHTTPClient(cfg.PollTimeout, cfg.HTTPClient),
		bot.WithErrorsHandler(func(err error) {
			a.log.Warn("telegram: library error", zap.String("error", redact(err.Error(), cfg.Token)))
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	a.bot = b
	a.botID = b.ID()
	a.poller = newPoller(a)
	a.setFree(cfg.FreeResponseChats)
	a.SetAllowlist(cfg.AllowedUsers, cfg.AllowedChats)
	if len(cfg.AllowedUsers) == 0 && len(cfg.AllowedChats) == 0 {
		a.log.Warn("telegram: allowlist is empty; every sender will be ignored")
	}
	return a, nil
}

// Name implements gateway.Platform.
func (a *Adapter) Name() string { return PlatformName }

// Ready is closed once the bot identity is known, the webhook is removed
// and the commands are registered: polling is about to start.
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// SetAllowlist replaces the allowed users and chats (SIGHUP reload).
func (a *Adapter) SetAllowlist(users, chats []int64) {
	u := make(map[int64]bool, len(users))
	for _, id := range users {
		u[id] = true
	}
	c := make(map[int64]bool, len(chats))
	for _, id := range chats {
		c[id] = true
	}
	a.mu.Lock()
	a.users, a.chats = u, c
	a.mu.Unlock()
}

func (a *Adapter) setFree(entries []string) {
	free := make(map[string]bool, len(entries))
	for _, e := range entries {
		free[strings.TrimSpace(e)] = true
	}
	a.free = free
}

// Authorize implements gateway.Authorizer: the sender is an allowed user,
// or the message comes from an allowed chat.
func (a *Adapter) Authorize(in gateway.Inbound) bool {
	if in.Address.Platform != PlatformName {
		return false
	}
	user, errUser := strconv.ParseInt(in.SenderID, 10, 64)
	chat, errChat := strconv.ParseInt(in.Address.ChatID, 10, 64)
	a.mu.RLock()
	defer a.mu.RUnlock()
	return (errUser == nil && a.users[user]) || (errChat == nil && a.chats[chat])
}

func (a *Adapter) identity() (id int64, username string) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.botID, a.botUsername
}

// Run connects and polls updates until ctx ends; it returns nil on a clean
// stop and an error only when the bot cannot work at all (bad token).
func (a *Adapter) Run(ctx context.Context, sink gateway.Sink) error {
	if sink == nil {
		return errors.New("telegram: nil sink")
	}
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("telegram: Run called twice")
	}
	if err := a.setup(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	a.readyOnce.Do(func() { close(a.ready) })
	err := a.poller.run(ctx, sink)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// setup learns who the bot is, removes a webhook (which would make
// getUpdates fail with 409) and registers the commands. Transient failures
// are retried; an invalid token is fatal.
func (a *Adapter) setup(ctx context.Context) error {
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"getMe", a.learnIdentity},
		{"getWebhookInfo", a.removeWebhook}, // then deleteWebhook, if one is set
		{"setMyCommands", a.registerCommands},
	}
	for _, s := range steps {
		if err := a.retry(ctx, s.name, s.fn); err != nil {
			return err
		}
	}
	return nil
}

func (a *Adapter) retry(ctx context.Context, name string, fn func(context.Context) error) error {
	delays := backoff.New(a.cfg.RetryBackoff, maxRetryBackoff)
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if rejectsToken(err) {
			return a.tokenRejected(name, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := max(delays.Next(), retryAfter(err))
		// The library's transport errors carry the request URL, token and all.
		a.log.Warn("telegram: start-up step failed; retrying", zap.String("step", name), zap.Duration("in", wait),
			zap.String("error", redact(err.Error(), a.cfg.Token)))
		if !backoff.Sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// rejectsToken reports a Bot API answer that only a new token can fix:
// 401 (revoked or mistyped), 404 (malformed, so no such bot) or 403.
func rejectsToken(err error) bool {
	return errors.Is(err, bot.ErrorUnauthorized) || errors.Is(err, bot.ErrorNotFound) || errors.Is(err, bot.ErrorForbidden)
}

// tokenRejected is the error for a method whose call refused the token: a
// configuration error (the daemon exits 2 rather than restart into the
// same answer) naming the URL used, the token in it replaced by <token>.
func (a *Adapter) tokenRejected(method string, err error) error {
	return fmt.Errorf("telegram: %s/bot<token>/%s: bot token rejected (check telegram.token): %s: %w",
		a.cfg.APIURL, method, redact(err.Error(), a.cfg.Token), gateway.ErrConfig)
}

func (a *Adapter) learnIdentity(ctx context.Context) error {
	if _, name := a.identity(); name != "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	me, err := a.bot.GetMe(ctx)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.botID, a.botUsername = me.ID, me.Username
	a.mu.Unlock()
	a.log.Info("telegram: connected", zap.String("bot", me.Username))
	return nil
}

func (a *Adapter) removeWebhook(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	info, err := a.bot.GetWebhookInfo(ctx)
	if err != nil {
		return err
	}
	if info.URL == "" {
		return nil
	}
	// The URL may embed a secret path; log only that one existed.
	a.log.Warn("telegram: a webhook was set; deleting it to use long polling",
		zap.Int("pending_updates", info.PendingUpdateCount))
	_, err = a.bot.DeleteWebhook(ctx, &bot.DeleteWebhookParams{DropPendingUpdates: false})
	return err
}
