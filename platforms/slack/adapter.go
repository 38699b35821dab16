package slack

import (
	"context"
	"errors"
	"sync"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// Compile-time checks of everything the adapter implements.
var (
	_ gateway.Platform        = (*Adapter)(nil)
	_ gateway.Typer           = (*Adapter)(nil)
	_ gateway.Deleter         = (*Adapter)(nil)
	_ gateway.ButtonSender    = (*Adapter)(nil)
	_ gateway.ButtonEditor    = (*Adapter)(nil)
	_ gateway.Authorizer      = (*Adapter)(nil)
	_ gateway.MakerAuthorizer = (*Adapter)(nil)
)

// Adapter is the Slack platform. Create it with New.
type Adapter struct {
	cfg Config
	log *zap.Logger
	api *slack.Client
	sm  *socketmode.Client

	allow *allowlist

	ready     chan struct{}
	readyOnce sync.Once

	mu      sync.Mutex
	sink    gateway.Sink
	running bool
	bot     botIdentity
}

// botIdentity is what auth.test said of us: UserID is how mentions name the
// bot (<@U…>), BotID marks our own posts when Slack echoes them.
type botIdentity struct {
	UserID, BotID, TeamID string
}

// New builds an adapter; it connects only in Run.
func New(cfg Config) (*Adapter, error) {
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	log := cfg.Logger.Named("slack")
	api := slack.New(cfg.BotToken,
		slack.OptionAppLevelToken(cfg.AppToken),
		slack.OptionAPIURL(cfg.APIURL),
		slack.OptionHTTPClient(httpClient(cfg)),
		// No OptionRetry: a 429 must reach the outbox as a RetryAfterError.
	)
	sm := socketmode.New(api,
		socketmode.OptionPingInterval(cfg.PingInterval),
		socketmode.OptionReadLimit(8<<20),
	)
	a := &Adapter{
		cfg:   cfg,
		log:   log,
		api:   api,
		sm:    sm,
		allow: newAllowlist(cfg.AllowedUsers, cfg.AllowedChannels),
		ready: make(chan struct{}),
	}
	if len(cfg.AllowedUsers) == 0 {
		log.Warn("slack.allowlist.empty: no allowed users; every sender is refused")
	}
	return a, nil
}

// Name implements gateway.Platform.
func (a *Adapter) Name() string { return PlatformName }

// Ready implements gateway.Platform: closed once the socket is connected
// and the first backfill has been handed to the gateway.
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// SetAllowlist replaces the allowed user and channel ids (SIGHUP reload).
func (a *Adapter) SetAllowlist(users, channels []string) { a.allow.set(users, channels) }

// Run connects and delivers inbound messages to sink until ctx ends.
func (a *Adapter) Run(ctx context.Context, sink gateway.Sink) error {
	a.mu.Lock()
	if a.running {
		a.mu.Unlock()
		return errors.New("slack: Run called twice")
	}
	a.sink, a.running = sink, true
	a.mu.Unlock()
	<-ctx.Done()
	return nil
}
