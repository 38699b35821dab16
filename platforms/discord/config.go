// Package discord connects gatewayd to Discord through discordgo: threads,
// guild channels and DMs become lanes, missed messages are fetched again
// after a restart, and replies are split at Discord's 2,000-character limit.
package discord

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"

	"github.com/gatewayd/gatewayd/gateway"
)

// PlatformName is the platform name used in gateway addresses.
const PlatformName = "discord"

// CursorStore persists the adapter's channel index across restarts and
// nodes: the channels with conversations, one row each, with the last
// message id handled in each (what a READY backfills after). *store.Store
// satisfies it. The named cursors are read only to import the index of
// older versions ("discord.lanes", "discord.last.<channel>").
type CursorStore interface {
	Cursor(ctx context.Context, name string) (string, bool, error)
	DeleteCursor(ctx context.Context, name string) error
	TrackChannel(ctx context.Context, platform, channelID string, engaged bool, lastMessageID int64, seenAt time.Time) error
	AdvanceChannel(ctx context.Context, platform, channelID string, lastMessageID int64) error
	ForgetChannel(ctx context.Context, platform, channelID string) error
	Channels(ctx context.Context, platform string, limit int) ([]store.ChannelRecord, error)
}

// maxRetryBackoff caps the wait between attempts to deliver an inbound
// message.
const maxRetryBackoff = 30 * time.Second

// Backfill bounds what is fetched again after a restart or a new session.
type Backfill struct {
	MaxMessages int           // per channel; default 50
	MaxAge      time.Duration // messages older than this are not fetched; default 24h
}

// Config configures an Adapter.
type Config struct {
	Token string // bot token, with or without the "Bot " prefix; never logged
	// APIURL overrides https://discord.com for REST calls (tests, proxies).
	// The websocket URL is whatever that server's /gateway route answers.
	APIURL string

	AllowedUsers    []string // user ids allowed everywhere
	AllowedRoles    []string // guild role ids allowed (member roles)
	AllowedGuilds   []string // when set, only these guilds are served
	AllowedChannels []string // when set, only these channels (or their threads) are served

	FreeResponseChannels []string // channels where every message is answered, mention or not
	AutoThread           bool     // a mention in a channel starts a thread for the conversation
	PerUserChannels      bool     // a guild channel is one lane per user
	// IgnoreBots drops messages from other bots. Ignoring is the default:
	// a bool cannot default to true, so bots are answered only when
	// AllowBots is set and IgnoreBots is not. The bot's own messages are
	// always ignored.
	IgnoreBots bool
	AllowBots  bool

	// Commands are the gateway's commands (gateway.Gateway.Commands); the
	// menu ones become the bot's slash commands.
	Commands []gateway.CommandInfo

	// Shard, when Shard.Count > 1, connects as shard Shard.ID of
	// Shard.Count: Discord then sends this session only the guilds with
	// (guild_id >> 22) % Count == ID, and DMs only to shard 0. The zero
	// value is one unsharded session.
	Shard Shard
	// ShardSets, when set, makes the adapter run the shards another part
	// of the process holds (cluster mode): Run connects one session per
	// shard id of Shard.Count in the latest set received, and closes the
	// sessions of ids no longer in it. Shard.ID is then unused.
	ShardSets <-chan []int

	Backfill Backfill
	// RetryBackoff is the first wait after a failed delivery of an inbound
	// message (the wait doubles up to 30 s); default 1 s.
	RetryBackoff time.Duration
	Cursor       CursorStore // nil: no backfill across restarts
	Logger       *zap.Logger
	Now          func() time.Time
	// HTTPClient is the base client for REST calls; nil uses a client with
	// a 30 s timeout. Its transport is wrapped when APIURL is set.
	HTTPClient *http.Client
}

// Shard is one gateway shard: ID of Count.
type Shard struct {
	ID, Count int
}

// ErrConfig marks an invalid configuration; it is a gateway.ErrConfig, so
// the daemon exits 2 on it.
var ErrConfig = fmt.Errorf("discord: invalid config: %w", gateway.ErrConfig)

func (c *Config) normalise() error {
	if strings.TrimSpace(c.Token) == "" {
		return fmt.Errorf("%w: discord.token is empty", ErrConfig)
	}
	if c.APIURL != "" {
		u, err := url.Parse(c.APIURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return fmt.Errorf("%w: discord.api_url %q is not an absolute URL", ErrConfig, c.APIURL)
		}
	}
	if c.Shard.Count < 0 || c.Shard.ID < 0 || (c.Shard.Count > 1 && c.Shard.ID >= c.Shard.Count) ||
		(c.Shard.Count <= 1 && c.Shard.ID != 0) {
		return fmt.Errorf("%w: shard %d of %d: want 0 <= id < count", ErrConfig, c.Shard.ID, c.Shard.Count)
	}
	if c.ShardSets != nil && (c.Shard.Count < 2 || c.Shard.ID != 0) {
		return fmt.Errorf("%w: shard sets need a shard count of 2 or more, got %d", ErrConfig, c.Shard.Count)
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Backfill.MaxMessages <= 0 {
		c.Backfill.MaxMessages = 50
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.Backfill.MaxAge <= 0 {
		c.Backfill.MaxAge = 24 * time.Hour
	}
	c.IgnoreBots = c.IgnoreBots || !c.AllowBots
	return nil
}

func botToken(token string) string {
	token = strings.TrimSpace(token)
	if strings.HasPrefix(token, "Bot ") {
		return token
	}
	return "Bot " + token
}

// rewriteTransport sends every request to base instead of discord.com, so
// tests and proxies work without touching discordgo's endpoint globals.
type rewriteTransport struct {
	base *url.URL
	next http.RoundTripper
}

func (t rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.URL = rewriteURL(req.URL, t.base)
	r.Host = t.base.Host
	return t.next.RoundTrip(r)
}

// rewriteURL is u sent to base: its scheme and host, its path as a prefix.
func rewriteURL(u, base *url.URL) *url.URL {
	out := *u
	out.Scheme, out.Host = base.Scheme, base.Host
	if p := strings.TrimSuffix(base.Path, "/"); p != "" {
		out.Path = p + u.Path
	}
	return &out
}

func httpClient(cfg Config) *http.Client {
	client := &http.Client{Timeout: 30 * time.Second}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		client = &c
	}
	if cfg.APIURL == "" {
		return client
	}
	base, _ := url.Parse(cfg.APIURL) // validated in normalise
	next := client.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	client.Transport = rewriteTransport{base: base, next: next}
	return client
}
