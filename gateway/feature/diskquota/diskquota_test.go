package diskquota

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

// hookCounter is a host that counts the hooks registered with it; any
// other use of the host fails the test (the embedded Host is nil).
type hookCounter struct {
	ext.Host
	hooks int
}

func (h *hookCounter) Logger() *zap.Logger { return zap.NewNop() }
func (h *hookCounter) OnRefuse(func(context.Context, ext.Lane, ext.Item) string) {
	h.hooks++
}
func (h *hookCounter) OnAfter(func(context.Context, ext.Lane, ext.Item)) { h.hooks++ }
func (h *hookCounter) OnStatus(func(context.Context, store.Lane, *strings.Builder)) {
	h.hooks++
}

// A quota of 0 is off: it adds no hook, so nothing is ever measured or
// refused; a quota adds its refusal, its measurement and its /status line.
func TestQuotaOffRegistersNothing(t *testing.T) {
	for _, tc := range []struct {
		limit int64
		hooks int
	}{{0, 0}, {1 << 20, 3}} {
		h := &hookCounter{}
		if err := New(tc.limit).Register(h); err != nil {
			t.Fatal(err)
		}
		if h.hooks != tc.hooks {
			t.Errorf("quota %d registered %d hooks, want %d", tc.limit, h.hooks, tc.hooks)
		}
	}
}
