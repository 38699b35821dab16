package slack

import (
	"sync"

	"github.com/gatewayd/gatewayd/gateway"
)

// allowlist holds who may talk to the bot and where. Users are checked
// everywhere; channels only in shared rooms (a DM is governed by its user).
type allowlist struct {
	mu       sync.RWMutex
	users    map[string]bool
	channels map[string]bool // empty: every channel the bot is in
}

func newAllowlist(users, channels []string) *allowlist {
	l := &allowlist{}
	l.set(users, channels)
	return l
}

func (l *allowlist) set(users, channels []string) {
	u, c := toSet(users), toSet(channels)
	l.mu.Lock()
	l.users, l.channels = u, c
	l.mu.Unlock()
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

// user reports whether id may talk to the bot at all.
func (l *allowlist) user(id string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.users[id]
}

// channel reports whether the bot serves the shared room id.
func (l *allowlist) channel(id string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.channels) == 0 || l.channels[id]
}

// allows is the whole check of a sender in a place.
func (l *allowlist) allows(addr gateway.Address, user string) bool {
	if !l.user(user) {
		return false
	}
	return addr.Kind == gateway.LaneDM || l.channel(addr.ChatID)
}

// Authorize implements gateway.Authorizer: the sender's id and place
// decide, as they do for every message the adapter delivers.
func (a *Adapter) Authorize(in gateway.Inbound) bool {
	return in.Address.Platform == PlatformName && a.allow.allows(in.Address, in.SenderID)
}

// AuthorizeMaker implements gateway.MakerAuthorizer: Slack allows by id
// alone, so the answer is always known.
func (a *Adapter) AuthorizeMaker(addr gateway.Address, senderID string) (allowed, known bool) {
	return addr.Platform == PlatformName && a.allow.allows(addr, senderID), true
}
