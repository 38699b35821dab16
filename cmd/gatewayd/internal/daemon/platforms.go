package daemon

import (
	"context"
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/matrix"
	"github.com/gatewayd/gatewayd/platforms/slack"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/store"
)

// chatPlatforms builds the Telegram, Discord, Slack and Matrix adapters
// whose tokens are set,
// their menus made of cmds (the gateway's commands).
// The local API lane is built separately (it carries /healthz and /metrics).
func chatPlatforms(cfg *config.Config, st *store.Store, cmds []gateway.CommandInfo, log *zap.Logger) ([]gateway.Platform, error) {
	return chatPlatformsGated(cfg, st, cmds, log, nil, nil)
}

// chatPlatformsGated is chatPlatforms with Telegram's poller gate (cluster
// mode: one elected poller) and Discord's shard sets (nil: unsharded).
func chatPlatformsGated(cfg *config.Config, st *store.Store, cmds []gateway.CommandInfo, log *zap.Logger,
	pollGate func(context.Context) (context.Context, telegram.CursorStore, error), shardSets <-chan []int) ([]gateway.Platform, error) {
	var out []gateway.Platform
	if cfg.Telegram.Enabled() {
		p, err := newTelegram(cfg.Telegram, st, cmds, log, pollGate)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if cfg.Discord.Enabled() {
		p, err := newDiscord(cfg.Discord, st, cmds, log, cfg.Cluster.DiscordShards, shardSets)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	// Slack and Matrix run on one node: CheckRuntime refuses them in
	// cluster mode (singleNodePlatforms).
	if cfg.Slack.Enabled() {
		p, err := newSlack(cfg.Slack, st, cmds, log)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if cfg.Matrix.Enabled() {
		p, err := newMatrix(cfg.Matrix, st, cmds, log)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// singleNodePlatforms refuses Slack and Matrix in cluster mode (the store
// on PostgreSQL), which has no election for their connection yet, unlike
// Telegram's poller and Discord's shards: Slack spreads an app's events
// over its open connections, so two nodes would split one thread's
// messages, and two Matrix nodes would sync the same events and move one
// sync token.
func singleNodePlatforms(cfg *config.Config) error {
	if !cfg.Store.Postgres() {
		return nil
	}
	const why = "set, but store.driver is postgres: cluster mode does not run %s yet (%s); run %s from a single-node gatewayd (store.driver: sqlite)"
	switch {
	case cfg.Slack.Enabled():
		return &config.Error{Key: "slack.bot_token", Msg: fmt.Sprintf(why, "Slack",
			"Slack spreads an app's events over its connections, so two nodes would split a thread's messages", "Slack")}
	case cfg.Matrix.Enabled():
		return &config.Error{Key: "matrix.access_token", Msg: fmt.Sprintf(why, "Matrix",
			"every node would sync the same events and move one sync token", "Matrix")}
	}
	return nil
}

func newSlack(c config.Slack, st *store.Store, cmds []gateway.CommandInfo, log *zap.Logger) (gateway.Platform, error) {
	a, err := slack.New(slack.Config{
		BotToken:        c.BotToken,
		AppToken:        c.AppToken,
		APIURL:          c.APIURL,
		AllowedUsers:    c.AllowedUsers,
		AllowedChannels: c.AllowedChannels,
		Commands:        cmds,
		Cursor:          st,
		Logger:          log, // the adapter names its logger "slack"
	})
	if err != nil {
		return nil, fmt.Errorf("gatewayd: slack: %w", err)
	}
	return a, nil
}

func newMatrix(c config.Matrix, st *store.Store, cmds []gateway.CommandInfo, log *zap.Logger) (gateway.Platform, error) {
	a, err := matrix.New(matrix.Config{
		Homeserver:   c.Homeserver,
		UserID:       c.UserID,
		AccessToken:  c.AccessToken,
		AllowedUsers: c.AllowedUsers,
		AllowedRooms: c.AllowedRooms,
		Commands:     cmds,
		Cursor:       st,
		Logger:       log.Named("matrix"),
	})
	if err != nil {
		return nil, fmt.Errorf("gatewayd: matrix: %w", err)
	}
	return a, nil
}

func newTelegram(c config.Telegram, st *store.Store, cmds []gateway.CommandInfo, log *zap.Logger,
	pollGate func(context.Context) (context.Context, telegram.CursorStore, error)) (gateway.Platform, error) {
	users, chats, err := telegramAllowlist(c)
	if err != nil {
		return nil, err
	}
	a, err := telegram.New(telegram.Config{
		Token:             c.Token,
		APIURL:            c.APIURL,
		AllowedUsers:      users,
		AllowedChats:      chats,
		FreeResponseChats: c.FreeResponseChats,
		Cursor:            st,
		PollTimeout:       c.PollTimeout,
		PollGate:          pollGate,
		DraftStreaming:    c.DraftStreaming,
		Commands:          cmds,
		Logger:            log.Named("telegram"),
	})
	if err != nil {
		return nil, fmt.Errorf("gatewayd: telegram: %w", err)
	}
	return a, nil
}

func newDiscord(c config.Discord, st *store.Store, cmds []gateway.CommandInfo, log *zap.Logger, shards int, shardSets <-chan []int) (gateway.Platform, error) {
	var shard discord.Shard
	if shardSets != nil {
		shard.Count = shards
	}
	a, err := discord.New(discord.Config{
		Shard:                shard,
		ShardSets:            shardSets,
		Token:                c.Token,
		APIURL:               c.APIURL,
		AllowedUsers:         c.AllowedUsers,
		AllowedRoles:         c.AllowedRoles,
		AllowedGuilds:        c.AllowedGuilds,
		AllowedChannels:      c.AllowedChannels,
		FreeResponseChannels: c.FreeResponseChannels,
		AutoThread:           c.AutoThread,
		PerUserChannels:      c.PerUserChannels,
		IgnoreBots:           c.IgnoreBots,
		AllowBots:            !c.IgnoreBots,
		Backfill:             discord.Backfill{MaxMessages: c.BackfillLimit, MaxAge: c.BackfillMaxAge},
		Cursor:               st,
		Commands:             cmds,
		Logger:               log.Named("discord"),
	})
	if err != nil {
		return nil, fmt.Errorf("gatewayd: discord: %w", err)
	}
	return a, nil
}

// telegramAllowlist parses the numeric ids Telegram uses.
func telegramAllowlist(c config.Telegram) (users, chats []int64, err error) {
	if users, err = parseIDs("telegram.allowed_users", c.AllowedUsers); err != nil {
		return nil, nil, err
	}
	if chats, err = parseIDs("telegram.allowed_chats", c.AllowedChats); err != nil {
		return nil, nil, err
	}
	return users, chats, nil
}

func parseIDs(key string, ids []string) ([]int64, error) {
	out := make([]int64, 0, len(ids))
	for _, s := range ids {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, &config.Error{Key: key, Msg: fmt.Sprintf("invalid id %q (numeric ids only)", s)}
		}
		out = append(out, n)
	}
	return out, nil
}

// The adapters' optional allowlist setters, used on SIGHUP. Discord's,
// Slack's and Matrix's have one signature, so the platform's name picks
// which lists it gets.
type (
	telegramAllowlister interface{ SetAllowlist(users, chats []int64) }
	stringAllowlister   interface{ SetAllowlist(users, places []string) }
)

// reloadAllowlists re-reads the configuration and applies the allowlists
// of the running adapters. Other changed keys need a restart; they are
// ignored here (and the reload says so).
func reloadAllowlists(opts config.Options, plats []gateway.Platform, log *zap.Logger) {
	cfg, err := config.Load(opts)
	if err != nil {
		log.Error("config.reload_failed", zap.Error(err))
		return
	}
	for _, p := range plats {
		if !reloadAllowlist(cfg, p, log) {
			log.Warn("config.reload_unsupported", zap.String("platform", p.Name()))
			continue
		}
		log.Info("config.allowlist_reloaded", zap.String("platform", p.Name()))
	}
}

// reloadAllowlist applies cfg's allowlist for p; false when p has none to
// set (or its lists did not parse, which is logged).
func reloadAllowlist(cfg *config.Config, p gateway.Platform, log *zap.Logger) bool {
	if a, ok := p.(telegramAllowlister); ok {
		users, chats, err := telegramAllowlist(cfg.Telegram)
		if err != nil {
			log.Error("config.reload_failed", zap.String("platform", p.Name()), zap.Error(err))
			return false
		}
		a.SetAllowlist(users, chats)
		return true
	}
	a, ok := p.(stringAllowlister)
	if !ok {
		return false
	}
	switch p.Name() {
	case discord.PlatformName:
		a.SetAllowlist(cfg.Discord.AllowedUsers, cfg.Discord.AllowedRoles)
	case slack.PlatformName:
		a.SetAllowlist(cfg.Slack.AllowedUsers, cfg.Slack.AllowedChannels)
	case matrix.PlatformName:
		a.SetAllowlist(cfg.Matrix.AllowedUsers, cfg.Matrix.AllowedRooms)
	default:
		return false
	}
	return true
}
