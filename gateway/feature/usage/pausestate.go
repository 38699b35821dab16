package usage

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"go.uber.org/zap"
)

// The usage-limit pause outlives a restart: its reset time and the lanes
// already told are kept in the store, so a restart during the pause keeps
// waiting (the inbox keeps the messages) and tells no lane a second time.

// usagePauseState is the store's name for the pause.
const usagePauseState = "usage_pause"

type savedPause struct {
	Until time.Time `json:"until"`
	Told  []string  `json:"told,omitempty"`
}

// saveUsagePause records the pause as it is now ("" once lifted). Saves
// are serialised so an older snapshot never overwrites a newer one. A
// failed save is logged: it costs at most a repeated notice after a
// restart, never a message.
func (m *Limits) saveUsagePause() {
	u := m.gate
	u.saveMu.Lock()
	defer u.saveMu.Unlock()
	u.mu.Lock()
	p := savedPause{Until: u.until}
	for key := range u.told {
		p.Told = append(p.Told, key)
	}
	u.mu.Unlock()
	value := ""
	if !p.Until.IsZero() {
		slices.Sort(p.Told)
		b, _ := json.Marshal(p)
		value = string(b)
	}
	if err := m.st.SetState(m.host.Context(), usagePauseState, value); err != nil {
		m.log.Warn("usage.pause_save_failed", zap.Error(err))
	}
}

// restoreUsagePause takes up a pause recorded before a restart, if it is
// still in force; one that ended meanwhile is cleared.
func (m *Limits) restoreUsagePause(ctx context.Context) {
	raw, err := m.st.State(ctx, usagePauseState)
	if err != nil || raw == "" {
		if err != nil {
			m.log.Warn("usage.pause_read_failed", zap.Error(err))
		}
		return
	}
	var p savedPause
	if err := json.Unmarshal([]byte(raw), &p); err != nil || !m.now().Before(p.Until) {
		if err != nil {
			m.log.Warn("usage.pause_unreadable", zap.Error(err))
		}
		if err := m.st.SetState(ctx, usagePauseState, ""); err != nil {
			m.log.Warn("usage.pause_save_failed", zap.Error(err))
		}
		return
	}
	u := m.gate
	u.mu.Lock()
	u.until = p.Until
	for _, key := range p.Told {
		u.told[key] = true
	}
	u.stop = u.after(p.Until.Sub(m.now()), m.resumeAtReset)
	u.mu.Unlock()
	m.log.Warn("usage.limit_restored", zap.Time("until", p.Until), zap.Int("lanes_told", len(p.Told)))
}
