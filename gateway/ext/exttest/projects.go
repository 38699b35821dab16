package exttest

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/ext"
)

// The place hooks (ext.PlaceHooks) are accepted and not run, as the work
// hooks are: the feature that places lanes is tested through the real
// core (gateway's harness).

func (h *Host) ProvidePlaces(ext.Places) error                  { return nil }
func (h *Host) DefaultDir(string) string                        { return h.Dir }
func (h *Host) OnStarted(func(ctx context.Context, t ext.Turn)) {}

// NotifyButtons records the text as a notice; the buttons are not kept.

// The fake turn stays where it is: it runs nowhere.

func (t *Turn) SetDir(string) {}
func (t *Turn) Refuse(string) {}
func (t *Turn) ID() string    { return "" }
