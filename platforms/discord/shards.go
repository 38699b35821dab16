package discord

import (
	"context"
	"slices"
	"strconv"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"
)

// allShards marks the session of an unsharded adapter (or one configured
// as a single fixed shard): it backfills every tracked channel.
const allShards = -1

// shardSession is the gateway connection of one held shard.
type shardSession struct {
	s      *discordgo.Session
	stop   chan struct{} // closed when the shard is let go: hang up, even after a reconnect
	cancel context.CancelFunc
	done   chan struct{} // closed when its connect loop has returned
}

func (sh *shardSession) stopped() bool {
	select {
	case <-sh.stop:
		return true
	default:
		return false
	}
}

// runShards connects the shards of the latest set from Config.ShardSets
// until ctx ends. A node may hold no shard at all, so the adapter is ready
// at once: each shard's session backfills its own channels on its READY.
func (a *Adapter) runShards(ctx context.Context) {
	a.readyOnce.Do(func() { close(a.ready) })
	running := map[int]*shardSession{}
	defer func() {
		for id, sh := range running {
			a.endShard(id, sh)
		}
	}()
	sets := a.cfg.ShardSets
	for {
		select {
		case <-ctx.Done():
			return
		case set, ok := <-sets:
			if !ok {
				sets = nil // no more changes: keep what runs until ctx ends
				continue
			}
			a.applyShards(ctx, running, set)
		}
	}
}

// applyShards makes running the sessions of set: new ids connected, ids
// dropped hung up.
func (a *Adapter) applyShards(ctx context.Context, running map[int]*shardSession, set []int) {
	for id, sh := range running {
		if !slices.Contains(set, id) {
			a.endShard(id, sh)
			delete(running, id)
		}
	}
	for _, id := range set {
		if _, ok := running[id]; ok {
			continue
		}
		if id < 0 || id >= a.cfg.Shard.Count {
			a.log.Error("discord.shard.invalid", zap.Int("shard", id), zap.Int("count", a.cfg.Shard.Count))
			continue
		}
		sh, err := a.startShard(ctx, id)
		if err != nil {
			a.log.Error("discord.shard.start_failed", zap.Int("shard", id), zap.Error(err))
			continue
		}
		running[id] = sh
	}
}

func (a *Adapter) startShard(ctx context.Context, id int) (*shardSession, error) {
	s, err := newSession(a.cfg, Shard{ID: id, Count: a.cfg.Shard.Count})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	sh := &shardSession{s: s, stop: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	a.addHandlers(s, id, func() bool { return a.stopped() || sh.stopped() })
	a.log.Info("discord.shard.starting", zap.Int("shard", id), zap.Int("count", a.cfg.Shard.Count))
	go func() {
		defer close(sh.done)
		// A refused token or shard cannot be fixed by retrying; the other
		// shards' sessions, and the outbound REST calls, carry on.
		if err := a.open(sctx, s); err != nil && sctx.Err() == nil {
			a.log.Error("discord.shard.connect_failed", zap.Int("shard", id), zap.Error(err))
		}
	}()
	return sh, nil
}

// endShard hangs up a shard's session. Events it already queued are still
// handled; what it misses is the next holder's backfill (or RESUME-less
// READY) to fetch.
func (a *Adapter) endShard(id int, sh *shardSession) {
	close(sh.stop)
	sh.cancel()
	<-sh.done
	if err := sh.s.Close(); err != nil {
		a.log.Debug("discord.shard.close", zap.Int("shard", id), zap.Error(err))
	}
	a.log.Info("discord.shard.stopped", zap.Int("shard", id))
}

// onShard reports whether channelID belongs to shard: its guild's shard,
// or shard 0 for DMs. A channel that cannot be looked up is left to the
// next READY.
func (a *Adapter) onShard(ctx context.Context, channelID string, shard int) bool {
	if shard == allShards {
		return true
	}
	info, err := a.channel(ctx, channelID)
	if err != nil {
		a.log.Warn("discord.backfill.channel_failed", zap.String("channel_id", channelID), zap.Error(err))
		return false
	}
	return ShardOf(info.GuildID, a.cfg.Shard.Count) == shard
}

// ShardOf is the shard Discord sends guild guildID's events to:
// (guild_id >> 22) % count; DMs (guildID "") go to shard 0.
func ShardOf(guildID string, count int) int {
	if guildID == "" || count < 2 {
		return 0
	}
	id, err := strconv.ParseUint(guildID, 10, 64)
	if err != nil {
		return 0
	}
	return int((id >> 22) % uint64(count))
}
