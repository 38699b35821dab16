package discord

import (
	"slices"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gatewayd/gatewayd/gateway"
	"go.uber.org/zap"
)

// deniedLogEvery limits the "sender refused" log line to one per sender per
// interval, so a chatty stranger cannot flood the log.
const deniedLogEvery = 10 * time.Minute

// allowlist decides who and where the bot serves. Users and roles can be
// replaced at runtime (SIGHUP); guilds and channels come from the config.
type allowlist struct {
	mu       sync.RWMutex
	users    map[string]bool
	roles    map[string]bool
	guilds   map[string]bool
	channels map[string]bool

	now        func() time.Time
	loggedMu   sync.Mutex
	lastLogged map[string]time.Time
}

func newAllowlist(cfg Config) *allowlist {
	l := &allowlist{
		guilds:     toSet(cfg.AllowedGuilds),
		channels:   toSet(cfg.AllowedChannels),
		now:        cfg.Now,
		lastLogged: map[string]time.Time{},
	}
	l.set(cfg.AllowedUsers, cfg.AllowedRoles)
	return l
}

func toSet(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id != "" {
			m[id] = true
		}
	}
	return m
}

func (l *allowlist) set(users, roles []string) {
	u, r := toSet(users), toSet(roles)
	l.mu.Lock()
	l.users, l.roles = u, r
	l.mu.Unlock()
}

// userAllowed: the user id is listed, or one of the member's roles is. An
// empty allowlist allows nobody.
func (l *allowlist) userAllowed(userID string, roles []string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.users[userID] {
		return true
	}
	return slices.ContainsFunc(roles, func(r string) bool { return l.roles[r] })
}

func (l *allowlist) needsRoles(userID string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return !l.users[userID] && len(l.roles) > 0
}

// placeAllowed checks the optional guild and channel lists. DMs are not
// in any guild or channel list; they are governed by users alone.
func (l *allowlist) placeAllowed(guildID string, ch chanInfo) bool {
	if ch.isDM() {
		return true
	}
	if len(l.guilds) > 0 && !l.guilds[guildID] {
		return false
	}
	return len(l.channels) == 0 || l.channels[ch.ID] || (ch.ParentID != "" && l.channels[ch.ParentID])
}

// addressAllowed is placeAllowed for an address (no guild id available).
func (l *allowlist) addressAllowed(addr gateway.Address) bool {
	if addr.Kind == gateway.LaneDM || len(l.channels) == 0 {
		return true
	}
	return l.channels[addr.ChatID] || (addr.TopicID != "" && l.channels[addr.TopicID])
}

// logDenied logs a refused sender at most once per deniedLogEvery.
func (l *allowlist) logDenied(log *zap.Logger, user *discordgo.User, where string) {
	l.loggedMu.Lock()
	now := l.now()
	last, seen := l.lastLogged[user.ID]
	if seen && now.Sub(last) < deniedLogEvery {
		l.loggedMu.Unlock()
		return
	}
	if len(l.lastLogged) > 10000 { // bound memory under a flood of strangers
		clear(l.lastLogged)
	}
	l.lastLogged[user.ID] = now
	l.loggedMu.Unlock()
	log.Info("discord.sender_refused", zap.String("user_id", user.ID),
		zap.String("user", user.Username), zap.String("channel_id", where))
}

// Authorize implements gateway.Authorizer: the sender's user id or one of
// their roles must be allowed, and the lane must be in an allowed channel.
func (a *Adapter) Authorize(in gateway.Inbound) bool {
	if in.Address.Platform != PlatformName {
		return false
	}
	return a.allow.addressAllowed(in.Address) && a.allow.userAllowed(in.SenderID, in.SenderRoles)
}

// AuthorizeMaker implements gateway.MakerAuthorizer: whether a
// schedule's maker may still use the lane, by their user id. A user not
// listed by id while roles are allowed is not known: their roles are not
// at hand here.
func (a *Adapter) AuthorizeMaker(addr gateway.Address, userID string) (allowed, known bool) {
	if addr.Platform != PlatformName || !a.allow.addressAllowed(addr) {
		return false, true
	}
	if a.allow.userAllowed(userID, nil) {
		return true, true
	}
	return false, !a.allow.needsRoles(userID)
}
