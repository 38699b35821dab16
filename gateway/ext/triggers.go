package ext

import (
	"context"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/store"
)

// Triggers are what a feature needs to start turns no one typed (a
// schedule's firing) and to do its own work in the background.
type Triggers interface {
	// Every runs fn once when the gateway starts running and then every
	// d, until it stops: fn's ctx ends at shutdown, after the lanes
	// drained, and the gateway waits for fn to return.
	Every(d time.Duration, fn func(ctx context.Context))
	// Trigger starts a turn no one typed in the lane at addr. write
	// stores its inbox row, in (with whatever the feature commits with
	// it, in the same commit), and reports the row's id and whether it
	// stored it; false means it ran before, and nothing runs. write runs
	// in the lane's intake order. A stored row then waits its turn like a
	// message, behind a running turn whatever the busy mode; its text is
	// never a command, and its reply starts with in.Origin.
	Trigger(ctx context.Context, addr chat.Address, in *store.Inbound,
		write func(ctx context.Context) (id int64, stored bool, err error)) (id int64, stored bool, err error)
	// Serves reports whether this node runs the turns of the lane whose
	// session key is key: always, unless several nodes share the
	// database.
	Serves(key string) bool
	// MakerAllowed reports whether the platform's allowlist, as it is
	// now, still lets maker use the lane at addr: a turn made by them
	// earlier (a schedule) then runs as them. A maker the platform cannot
	// judge (no id, a Discord role) is allowed.
	MakerAllowed(addr chat.Address, maker string) bool
}
