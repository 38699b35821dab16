package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// chanInfo is what routing needs to know about a channel.
type chanInfo struct {
	ID, GuildID, ParentID, OwnerID string
	Type                           discordgo.ChannelType
	Name                           string // the channel's or thread's; "" in a DM
}

func (c chanInfo) isDM() bool {
	return c.Type == discordgo.ChannelTypeDM || c.Type == discordgo.ChannelTypeGroupDM
}

func (c chanInfo) isThread() bool {
	switch c.Type {
	case discordgo.ChannelTypeGuildPublicThread, discordgo.ChannelTypeGuildPrivateThread,
		discordgo.ChannelTypeGuildNewsThread:
		return true
	}
	return false
}

func infoOf(c *discordgo.Channel) chanInfo {
	return chanInfo{ID: c.ID, GuildID: c.GuildID, ParentID: c.ParentID, OwnerID: c.OwnerID, Type: c.Type, Name: c.Name}
}

// channelCache remembers channels seen in GUILD_CREATE/THREAD_CREATE and
// asks REST for the rest.
type channelCache struct {
	mu sync.RWMutex
	m  map[string]chanInfo
	// tiers are the guilds' boost tiers (GUILD_CREATE), which set their
	// upload limit.
	tiers map[string]discordgo.PremiumTier
}

func newChannelCache() *channelCache {
	return &channelCache{m: map[string]chanInfo{}, tiers: map[string]discordgo.PremiumTier{}}
}

func (c *channelCache) put(ch *discordgo.Channel) {
	if ch == nil || ch.ID == "" {
		return
	}
	c.mu.Lock()
	c.m[ch.ID] = infoOf(ch)
	c.mu.Unlock()
}

// rename caches ch, a thread's THREAD_UPDATE, and reports it when it
// changed the name of a thread the cache knew. A thread not cached is no
// rename: its old name is not known, and an update (archived, locked)
// must not pass for one. The bot's own renames are cached when Discord
// answers them, so their echo is no change either.
func (c *channelCache) rename(ch *discordgo.Channel) (chanInfo, bool) {
	if ch == nil || ch.ID == "" {
		return chanInfo{}, false
	}
	info := infoOf(ch)
	c.mu.Lock()
	defer c.mu.Unlock()
	old, known := c.m[ch.ID]
	c.m[ch.ID] = info
	return info, known && info.isThread() && ch.Name != "" && old.Name != ch.Name
}

func (c *channelCache) putGuild(g *discordgo.Guild) {
	if g == nil {
		return
	}
	c.mu.Lock()
	c.tiers[g.ID] = g.PremiumTier
	c.mu.Unlock()
	for _, ch := range append(append([]*discordgo.Channel{}, g.Channels...), g.Threads...) {
		if ch.GuildID == "" {
			ch.GuildID = g.ID
		}
		c.put(ch)
	}
}

func (a *Adapter) channel(ctx context.Context, id string) (chanInfo, error) {
	a.channels.mu.RLock()
	info, ok := a.channels.m[id]
	a.channels.mu.RUnlock()
	if ok {
		return info, nil
	}
	ch, err := a.session.Channel(id, discordgo.WithContext(ctx))
	if err != nil {
		return chanInfo{}, mapError("get channel", err)
	}
	a.channels.put(ch)
	return infoOf(ch), nil
}

// laneRecord is what this process knows of a channel in the index.
type laneRecord struct {
	engaged bool  // a thread the bot was addressed in
	seen    int64 // unix seconds of the last delivery written to the index
}

// Legacy index names: before the channel index table (store migration 15)
// the lanes were one JSON blob and each lane's last message id a cursor of
// its own. load moves them into the table once.
const (
	legacyLanesCursor = "discord.lanes"
	legacyLastPrefix  = "discord.last."
)

const (
	maxIndexLanes = 500       // older lanes are not backfilled
	reseenAfter   = time.Hour // how stale a lane's seen time gets before it is written again
)

// laneIndex keeps the channels with conversations (for backfill) and the
// last message id handled in each. The database holds the index, one row
// per channel, written by the node that ingests the channel's messages;
// nodes never read, merge and write back each other's rows, so none can
// drop another's lane. This process keeps a cache of it for routing
// (engaged threads, which channels' cursors to move), refreshed from the
// database at every READY.
type laneIndex struct {
	store CursorStore
	log   *zap.Logger
	mu    sync.Mutex
	lanes map[string]laneRecord
	last  map[string]uint64 // last message id handled per channel, this process
	held  map[string]bool   // channels whose cursor must not move any more, this process
}

func newLaneIndex(store CursorStore, log *zap.Logger) *laneIndex {
	return &laneIndex{store: store, log: log, lanes: map[string]laneRecord{}, last: map[string]uint64{},
		held: map[string]bool{}}
}

// load moves a legacy index into the store, then reads the index.
func (l *laneIndex) load(ctx context.Context) error {
	if l.store == nil {
		return nil
	}
	if err := l.importLegacy(ctx); err != nil {
		return err
	}
	_, err := l.refresh(ctx)
	return err
}

// refresh reads the index as the database holds it now (other nodes add
// the lanes of the shards they hold) into this process's cache, and
// returns it, the most recently seen first.
func (l *laneIndex) refresh(ctx context.Context) ([]store.ChannelRecord, error) {
	if l.store == nil {
		return nil, nil
	}
	recs, err := l.store.Channels(ctx, PlatformName, maxIndexLanes)
	if err != nil {
		return nil, fmt.Errorf("discord: read lanes: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		mine := l.lanes[r.ChannelID]
		mine.engaged = mine.engaged || r.Engaged
		mine.seen = max(mine.seen, r.SeenAt.Unix())
		l.lanes[r.ChannelID] = mine
	}
	return recs, nil
}

// importLegacy writes the legacy blob's lanes, with their cursors, as
// index rows, then deletes the legacy names. Rows only grow, so two nodes
// importing at once, or an import cut short and run again, are harmless.
func (l *laneIndex) importLegacy(ctx context.Context) error {
	raw, ok, err := l.store.Cursor(ctx, legacyLanesCursor)
	if err != nil || !ok {
		return err
	}
	var legacy map[string]struct {
		Engaged bool  `json:"engaged"`
		Seen    int64 `json:"seen"`
	}
	if err := json.Unmarshal([]byte(raw), &legacy); err != nil {
		return fmt.Errorf("discord: decode legacy %s: %w", legacyLanesCursor, err)
	}
	for id, rec := range legacy {
		last, err := l.legacyLast(ctx, id)
		if err != nil {
			return err
		}
		if err := l.store.TrackChannel(ctx, PlatformName, id, rec.Engaged, last, time.Unix(rec.Seen, 0)); err != nil {
			return fmt.Errorf("discord: import lane %s: %w", id, err)
		}
		if err := l.store.DeleteCursor(ctx, legacyLastPrefix+id); err != nil {
			return fmt.Errorf("discord: import lane %s: %w", id, err)
		}
	}
	if err := l.store.DeleteCursor(ctx, legacyLanesCursor); err != nil {
		return fmt.Errorf("discord: import lanes: %w", err)
	}
	l.log.Info("discord.lanes.imported", zap.Int("lanes", len(legacy)))
	return nil
}

// legacyLast is a legacy lane's cursor, 0 when it has none or it is not
// a snowflake (the lane is then not backfilled until its next message).
func (l *laneIndex) legacyLast(ctx context.Context, channelID string) (int64, error) {
	v, ok, err := l.store.Cursor(ctx, legacyLastPrefix+channelID)
	if err != nil {
		return 0, fmt.Errorf("discord: import lane %s: %w", channelID, err)
	}
	if !ok {
		return 0, nil
	}
	n, err := snowflakeInt(v)
	if err != nil {
		l.log.Warn("discord.lanes.import_bad_cursor", zap.String("channel_id", channelID), zap.Error(err))
		return 0, nil
	}
	return n, nil
}

func (l *laneIndex) engaged(channelID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lanes[channelID].engaged
}

// track adds the channel to the index (engaged marks a thread the bot was
// mentioned in). The row is written when it is new to this process, newly
// engaged or last written an hour ago; its cursor is advance's.
func (l *laneIndex) track(ctx context.Context, channelID string, engaged bool, now time.Time) error {
	return l.trackAfter(ctx, channelID, engaged, 0, now)
}

// ingesting tracks the channel of message id before the message is
// delivered, with the cursor just before it. Killed at any point after
// this, the node leaves a row from which the shard's next holder fetches
// the message again (the inbox drops it if it was committed); a lane
// tracked only after the delivery would be lost to a crash in between.
// The store never moves a cursor back, so a lane tracked already keeps
// its own.
func (l *laneIndex) ingesting(ctx context.Context, channelID, id string, now time.Time) error {
	n, err := snowflakeInt(id)
	if err != nil {
		return err
	}
	return l.trackAfter(ctx, channelID, false, max(n-1, 0), now)
}

// trackAfter is track with the cursor at least after (0: unchanged).
func (l *laneIndex) trackAfter(ctx context.Context, channelID string, engaged bool, after int64, now time.Time) error {
	l.mu.Lock()
	rec, ok := l.lanes[channelID]
	changed := !ok || (engaged && !rec.engaged) || now.Unix()-rec.seen > int64(reseenAfter/time.Second)
	rec.engaged = rec.engaged || engaged
	if changed {
		rec.seen = now.Unix()
	}
	l.lanes[channelID] = rec
	l.mu.Unlock()
	if !changed || l.store == nil {
		return nil
	}
	if err := l.store.TrackChannel(ctx, PlatformName, channelID, rec.engaged, after, now); err != nil {
		return fmt.Errorf("discord: save lane: %w", err)
	}
	return nil
}

func (l *laneIndex) forget(ctx context.Context, channelID string) error {
	l.mu.Lock()
	delete(l.lanes, channelID)
	l.mu.Unlock()
	if l.store == nil {
		return nil
	}
	if err := l.store.ForgetChannel(ctx, PlatformName, channelID); err != nil {
		return fmt.Errorf("discord: forget lane: %w", err)
	}
	return nil
}

// channelIDs are the channels of this process's cache of the index.
func (l *laneIndex) channelIDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.lanes))
	for id := range l.lanes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// handled reports whether id was already handled in this process (a live
// event for a message that backfill delivered moments earlier).
func (l *laneIndex) handled(channelID, id string) bool {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return n <= l.last[channelID]
}

// hold freezes the channel's cursor for the rest of this process: a
// message in it was not delivered, and the backfill of the next start must
// find it after the cursor.
func (l *laneIndex) hold(channelID string) {
	l.mu.Lock()
	l.held[channelID] = true
	l.mu.Unlock()
}

// advance records id as the last message seen in the channel; the cursor
// is persisted only for tracked channels, and the database keeps the
// larger of its id and this one (another node may have handled a later
// message around a handover). A held channel does not move.
func (l *laneIndex) advance(ctx context.Context, channelID, id string) error {
	n, err := snowflakeInt(id)
	if err != nil {
		return err
	}
	l.mu.Lock()
	if l.held[channelID] || uint64(n) <= l.last[channelID] {
		l.mu.Unlock()
		return nil
	}
	l.last[channelID] = uint64(n)
	_, tracked := l.lanes[channelID]
	l.mu.Unlock()
	if !tracked || l.store == nil {
		return nil
	}
	if err := l.store.AdvanceChannel(ctx, PlatformName, channelID, n); err != nil {
		return fmt.Errorf("discord: save cursor: %w", err)
	}
	return nil
}

// snowflakeInt is a message id as the store keeps it. Snowflakes fit in
// 63 bits until 2084; a larger one is refused rather than wrapped.
func snowflakeInt(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("discord: message id %q is not a snowflake", id)
	}
	return n, nil
}

// discordEpochMS is the first millisecond of 2015, the snowflake epoch.
const discordEpochMS = 1420070400000

// snowflakeAt is the smallest snowflake of the given time.
func snowflakeAt(t time.Time) uint64 {
	ms := t.UnixMilli() - discordEpochMS
	if ms < 0 {
		return 0
	}
	return uint64(ms) << 22
}

func parseSnowflake(id string) uint64 {
	n, _ := strconv.ParseUint(id, 10, 64)
	return n
}
