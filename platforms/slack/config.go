// Package slack connects gatewayd to Slack over Socket Mode (no public URL
// needed): a DM is a lane, and a thread the bot was mentioned in (or opened)
// is a lane. Events are acknowledged to Slack only after the gateway has
// committed them, threads missed while disconnected are read back with
// conversations.replies, and replies are split under Slack's block limits.
package slack

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// PlatformName is the platform name used in gateway addresses.
const PlatformName = "slack"

// DefaultAPIURL is Slack's Web API base; slack-go needs the trailing slash.
const DefaultAPIURL = "https://slack.com/api/"

// CursorStore persists the adapter's index of conversations across restarts:
// the threads and DMs with lanes, each with the ts of the last message
// handled (what a reconnect backfills after). *store.Store satisfies it; it
// is the interface the Discord adapter uses for the same index.
type CursorStore interface {
	Cursor(ctx context.Context, name string) (string, bool, error)
	DeleteCursor(ctx context.Context, name string) error
	TrackChannel(ctx context.Context, platform, channelID string, engaged bool, lastMessageID int64, seenAt time.Time) error
	AdvanceChannel(ctx context.Context, platform, channelID string, lastMessageID int64) error
	ForgetChannel(ctx context.Context, platform, channelID string) error
	Channels(ctx context.Context, platform string, limit int) ([]store.ChannelRecord, error)
}

// Backfill bounds what is read again after a reconnect or a restart.
type Backfill struct {
	MaxMessages int           // per conversation; default 50
	MaxAge      time.Duration // older messages are not read back; default 24h
}

// Config configures an Adapter.
type Config struct {
	BotToken string // slack.bot_token (xoxb-…); never logged
	AppToken string // slack.app_token (xapp-…, Socket Mode); never logged
	// APIURL is slack.api_url; "" is DefaultAPIURL. A trailing slash is
	// added when missing: slack-go concatenates the method name to it.
	APIURL          string
	AllowedUsers    []string // slack.allowed_users (user ids)
	AllowedChannels []string // slack.allowed_channels; empty: every channel the bot is in
	// Commands are the gateway's commands (gateway.Gateway.Commands): a
	// thread message "!name" or "/name" with one of these names is that
	// command.
	Commands []gateway.CommandInfo
	Cursor   CursorStore // nil: no backfill across restarts
	// HTTPClient is the client of every Web API call, upload and
	// download; nil uses one whose transport times out waiting for
	// response headers (a global timeout would cut long uploads).
	HTTPClient *http.Client
	Logger     *zap.Logger

	// The fields below have defaults fit for production; tests shorten them.

	Backfill Backfill
	// RetryBackoff is the first wait after a failed delivery of an
	// inbound message (it doubles up to 30 s); default 1 s.
	RetryBackoff time.Duration
	// PingInterval is how long the socket may go without Slack's ping
	// before it is redialled; default 30 s.
	PingInterval time.Duration
	// UpdatesPerMinute bounds chat.update calls (Slack's tier 3, shared by
	// the whole workspace); default 50.
	UpdatesPerMinute int
	Now              func() time.Time
}

// ErrConfig marks an invalid configuration; it is a gateway.ErrConfig, so
// the daemon exits 2 on it.
var ErrConfig = fmt.Errorf("slack: invalid config: %w", gateway.ErrConfig)

// maxRetryBackoff caps the wait between attempts to deliver an inbound
// message.
const maxRetryBackoff = 30 * time.Second

func (c *Config) normalise() error {
	c.BotToken, c.AppToken = strings.TrimSpace(c.BotToken), strings.TrimSpace(c.AppToken)
	switch {
	case c.BotToken == "":
		return fmt.Errorf("%w: slack.bot_token is empty", ErrConfig)
	case !strings.HasPrefix(c.BotToken, "xoxb-"):
		return fmt.Errorf("%w: slack.bot_token: not a bot token (xoxb-…)", ErrConfig)
	case c.AppToken == "":
		return fmt.Errorf("%w: slack.app_token is empty (Socket Mode needs it)", ErrConfig)
	case !strings.HasPrefix(c.AppToken, "xapp-"):
		return fmt.Errorf("%w: slack.app_token: not an app-level token (xapp-…)", ErrConfig)
	}
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	u, err := url.Parse(c.APIURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: slack.api_url %q is not an absolute http(s) URL", ErrConfig, c.APIURL)
	}
	if !strings.HasSuffix(c.APIURL, "/") {
		c.APIURL += "/"
	}
	c.defaults()
	return nil
}

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Backfill.MaxMessages <= 0 {
		c.Backfill.MaxMessages = 50
	}
	if c.Backfill.MaxAge <= 0 {
		c.Backfill.MaxAge = 24 * time.Hour
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.PingInterval <= 0 {
		c.PingInterval = 30 * time.Second
	}
	if c.UpdatesPerMinute <= 0 {
		c.UpdatesPerMinute = 50
	}
}

// httpClient is cfg's client, or one that bounds the wait for response
// headers but not the body (uploads and downloads share it).
func httpClient(cfg Config) *http.Client {
	if cfg.HTTPClient != nil {
		return cfg.HTTPClient
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		ResponseHeaderTimeout: 30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		IdleConnTimeout:       90 * time.Second,
	}}
}
