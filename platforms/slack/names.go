package slack

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

const (
	nameTTL      = time.Hour
	maxNames     = 2000
	denialRepeat = 10 * time.Minute
)

type userName struct {
	name, display string
	at            time.Time
}

// nameCache keeps users.info's answers for an hour: every message would
// otherwise cost a lookup (tier 4, 100 a minute).
type nameCache struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]userName
}

func newNameCache(now func() time.Time) *nameCache {
	return &nameCache{now: now, m: map[string]userName{}}
}

// userNames is the sender's handle and the name people see (display
// name, else real name, else handle). A failed lookup still delivers,
// named by the id.
func (a *Adapter) userNames(ctx context.Context, userID string) (name, display string) {
	c := a.names
	c.mu.Lock()
	n, ok := c.m[userID]
	c.mu.Unlock()
	if ok && c.now().Sub(n.at) < nameTTL {
		return n.name, n.display
	}
	u, err := a.api.GetUserInfoContext(ctx, userID)
	if err != nil {
		a.log.Debug("slack.user_lookup_failed", zap.String("user_id", userID), zap.Error(err))
		return userID, ""
	}
	n = userName{name: u.Name, display: firstNonEmpty(u.Profile.DisplayName, u.Profile.RealName, u.RealName, u.Name),
		at: c.now()}
	c.mu.Lock()
	if len(c.m) >= maxNames {
		clear(c.m) // a crude bound; names come back on the next lookup
	}
	c.m[userID] = n
	c.mu.Unlock()
	return n.name, n.display
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// denialLog logs a refused sender once per ten minutes, so a busy
// channel does not flood the log.
type denialLog struct {
	now  func() time.Time
	mu   sync.Mutex
	last map[string]time.Time
}

func newDenialLog(now func() time.Time) *denialLog {
	return &denialLog{now: now, last: map[string]time.Time{}}
}

// maxDenials bounds the refused senders remembered; past it the expired
// ones are forgotten, and all of them if none has expired.
const maxDenials = 1000

// log logs the refusal of userID unless it was logged within
// denialRepeat; it reports whether it did, so a refusal is answered
// (an ephemeral) no more often than it is logged.
func (d *denialLog) log(log *zap.Logger, userID, channelID string) bool {
	d.mu.Lock()
	now := d.now()
	if t, ok := d.last[userID]; ok && now.Sub(t) < denialRepeat {
		d.mu.Unlock()
		return false
	}
	if len(d.last) >= maxDenials {
		d.forgetExpiredLocked(now)
	}
	d.last[userID] = now
	d.mu.Unlock()
	log.Warn("slack.sender_not_allowed: add the id to slack.allowed_users to let them in",
		zap.String("user_id", userID), zap.String("channel_id", channelID))
	return true
}

func (d *denialLog) forgetExpiredLocked(now time.Time) {
	for id, t := range d.last {
		if now.Sub(t) >= denialRepeat {
			delete(d.last, id)
		}
	}
	if len(d.last) >= maxDenials {
		clear(d.last)
	}
}
