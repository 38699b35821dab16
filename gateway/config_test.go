package gateway

import (
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/config"
)

// New fills in nothing: a Config missing a value it needs is refused,
// naming the field; WithDefaults takes the values from config's key table.
func TestNewTakesTheConfigAsGiven(t *testing.T) {
	if _, err := New(Config{}, newFakeStore(), newFakeCodex()); err == nil || !strings.Contains(err.Error(), "Config.MaxLive") {
		t.Errorf("New(Config{}) = %v, want an error naming MaxLive", err)
	}
	cfg := Config{QueueLimit: 3}.WithDefaults()
	d := config.Defaults()
	if cfg.QueueLimit != 3 || cfg.MaxLive != d.Lanes.MaxLive || cfg.DrainTimeout != d.Shutdown.DrainTimeout ||
		cfg.Approvers != d.Codex.Approvers {
		t.Errorf("WithDefaults = %+v, want the table's values around the one set", cfg)
	}
	if cfg.IdleEvict != 0 {
		t.Errorf("WithDefaults turned on what zero leaves off: %+v", cfg)
	}
	if _, err := New(cfg, newFakeStore(), newFakeCodex()); err != nil {
		t.Errorf("New(WithDefaults): %v", err)
	}
}
