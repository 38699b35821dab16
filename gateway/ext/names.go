package ext

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// NameHooks are where a feature keeps a lane's place and its Codex thread
// named alike: it hears the platform's renames of a place, and renames a
// place on its platform.
type NameHooks interface {
	// OnRenamed takes a rename of a lane's place on its platform
	// (in.Renamed: in.Title is the new name). Nothing of it is recorded;
	// fn runs on the adapter's delivery, in the lane's order.
	OnRenamed(fn func(ctx context.Context, in chat.Inbound))
	// RenamePlace renames the place of the lane at addr on its platform.
	// A platform that cannot rename it, or where the bot may not, is an
	// error wrapping chat.ErrCannotRename.
	RenamePlace(ctx context.Context, addr chat.Address, name string) error
}
