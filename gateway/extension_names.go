package gateway

import (
	"context"
	"fmt"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// The core's side of ext.NameHooks: the features that hear a lane's place
// renamed on its platform, and rename places through the platforms that
// can (chat.Renamer).

// nameServices are ext.NameHooks, the extension host's (extCore embeds
// them).
type nameServices struct {
	h         *host
	platforms map[string]Platform // the gateway's, filled by AddPlatform before Run
}

func (s nameServices) OnRenamed(fn func(ctx context.Context, in chat.Inbound)) {
	s.h.renamed = append(s.h.renamed, fn)
}

func (s nameServices) RenamePlace(ctx context.Context, addr chat.Address, name string) error {
	p, ok := s.platforms[addr.Platform]
	if !ok {
		return fmt.Errorf("gateway: %s is not running", addr.Platform)
	}
	r, ok := p.(chat.Renamer)
	if !ok {
		return fmt.Errorf("gateway: %s: %w", addr.Platform, chat.ErrCannotRename)
	}
	return r.RenamePlace(ctx, addr, name)
}

var _ ext.NameHooks = nameServices{}

// placeRenamed hands a rename of a lane's place to the features.
func (h *host) placeRenamed(ctx context.Context, in Inbound) {
	for _, fn := range h.renamed {
		fn(ctx, in)
	}
}
