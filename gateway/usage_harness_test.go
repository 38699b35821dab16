package gateway

import (
	"testing"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/feature/compact"
)

// withFeatures is cfg with fs in place of its features of the same names
// (a feature built over a test's own fakes or settings).
func withFeatures(cfg Config, fs ...ext.Feature) Config {
	cfg.Features = withDefaultFeatures(cfg.Features, fs)
	return cfg
}

// compacting builds h's gateway again with compaction set as cc (over h's
// fakes); call it before start.
func (h *harness) compacting(t testing.TB, cc compact.Config) *harness {
	t.Helper()
	g, err := New(withFeatures(h.g.cfg, compact.New(cc, h.st, h.cx)), h.st, h.cx)
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(h.p)
	h.g = g
	return h
}
