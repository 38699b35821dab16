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

// laneRecord is one channel the bot has answered in.
type laneRecord struct {
	Engaged bool  `json:"engaged,omitempty"` // a thread the bot was mentioned in
	Seen    int64 `json:"seen"`              // unix seconds of the last delivery
}

const (
	lanesCursor   = "discord.lanes"
	lastPrefix    = "discord.last."
	maxIndexLanes = 500 // older lanes are not backfilled
)

// laneIndex persists the channels with conversations (for backfill) and
// the last message id seen in each, through the cursor store.
type laneIndex struct {
	store CursorStore
	mu    sync.Mutex
	lanes map[string]laneRecord
	last  map[string]uint64 // last message id handled per channel, this process
	held  map[string]bool   // channels whose cursor must not move any more, this process
	// forgotten are lanes this process dropped: merging the stored index
	// must not bring them back.
	forgotten map[string]bool
}

func newLaneIndex(store CursorStore) *laneIndex {
	return &laneIndex{store: store, lanes: map[string]laneRecord{}, last: map[string]uint64{},
		held: map[string]bool{}, forgotten: map[string]bool{}}
}

// load merges the stored index into this process's: several nodes share
// it, each adding the lanes of its own shards.
func (l *laneIndex) load(ctx context.Context) error {
	stored, err := l.stored(ctx)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.mergeLocked(stored)
	l.mu.Unlock()
	return nil
}

func (l *laneIndex) stored(ctx context.Context) (map[string]laneRecord, error) {
	if l.store == nil {
		return nil, nil
	}
	raw, ok, err := l.store.Cursor(ctx, lanesCursor)
	if err != nil || !ok {
		return nil, err
	}
	m := map[string]laneRecord{}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("discord: decode %s: %w", lanesCursor, err)
	}
	return m, nil
}

// mergeLocked adds the stored records, except the lanes this process
// forgot; callers hold l.mu.
func (l *laneIndex) mergeLocked(stored map[string]laneRecord) {
	for id, rec := range stored {
		if l.forgotten[id] {
			continue
		}
		mine, ok := l.lanes[id]
		if !ok {
			l.lanes[id] = rec
			continue
		}
		mine.Engaged = mine.Engaged || rec.Engaged
		mine.Seen = max(mine.Seen, rec.Seen)
		l.lanes[id] = mine
	}
}

// saveLocked writes the index, merged with what other nodes stored since
// (read, then write: two nodes saving at the same instant can still lose
// one's new lane until it saves again); callers hold l.mu.
func (l *laneIndex) saveLocked(ctx context.Context, now time.Time) error {
	if l.store == nil {
		return nil
	}
	stored, err := l.stored(ctx)
	if err != nil {
		return err
	}
	l.mergeLocked(stored)
	if len(l.lanes) > maxIndexLanes {
		ids := make([]string, 0, len(l.lanes))
		for id := range l.lanes {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return l.lanes[ids[i]].Seen < l.lanes[ids[j]].Seen })
		for _, id := range ids[:len(ids)-maxIndexLanes] {
			delete(l.lanes, id)
		}
	}
	raw, err := json.Marshal(l.lanes)
	if err != nil {
		return fmt.Errorf("discord: encode lanes: %w", err)
	}
	if err := l.store.SetCursor(ctx, lanesCursor, string(raw)); err != nil {
		return fmt.Errorf("discord: save lanes: %w", err)
	}
	return nil
}

func (l *laneIndex) engaged(channelID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lanes[channelID].Engaged
}

// track adds the channel to the index (engaged marks a thread the bot was
// mentioned in) and persists the index when it changed.
func (l *laneIndex) track(ctx context.Context, channelID string, engaged bool, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec, ok := l.lanes[channelID]
	changed := !ok || (engaged && !rec.Engaged) || now.Unix()-rec.Seen > 3600
	rec.Engaged = rec.Engaged || engaged
	rec.Seen = now.Unix()
	l.lanes[channelID] = rec
	delete(l.forgotten, channelID)
	if !changed {
		return nil
	}
	return l.saveLocked(ctx, now)
}

func (l *laneIndex) forget(ctx context.Context, channelID string, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.lanes, channelID)
	l.forgotten[channelID] = true
	return l.saveLocked(ctx, now)
}

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
// is persisted only for tracked channels. A held channel does not move.
func (l *laneIndex) advance(ctx context.Context, channelID, id string) error {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return fmt.Errorf("discord: message id %q: %w", id, err)
	}
	l.mu.Lock()
	if l.held[channelID] || n <= l.last[channelID] {
		l.mu.Unlock()
		return nil
	}
	l.last[channelID] = n
	_, tracked := l.lanes[channelID]
	l.mu.Unlock()
	if !tracked || l.store == nil {
		return nil
	}
	if err := l.store.SetCursor(ctx, lastPrefix+channelID, id); err != nil {
		return fmt.Errorf("discord: save cursor: %w", err)
	}
	return nil
}

func (l *laneIndex) cursor(ctx context.Context, channelID string) (string, bool, error) {
	if l.store == nil {
		return "", false, nil
	}
	return l.store.Cursor(ctx, lastPrefix+channelID)
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
