package matrix

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/gatewayd/gatewayd/gateway"
)

// Adapter is the Matrix platform.
type Adapter struct {
	cfg Config
	log *zap.Logger
	cli *mautrix.Client

	ready     chan struct{}
	readyOnce sync.Once

	mu    sync.Mutex
	me    id.UserID
	users map[string]bool // allowed senders
	rooms map[string]bool // allowed rooms; empty = any
}

// New checks cfg and builds the adapter; it does not touch the network.
func New(cfg Config) (*Adapter, error) {
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	cli, err := mautrix.NewClient(cfg.Homeserver, id.UserID(cfg.UserID), cfg.AccessToken)
	if err != nil {
		return nil, fmt.Errorf("%w: matrix.homeserver: %v", ErrConfig, err)
	}
	// NewClient's client has a 180 s overall timeout that would cut long
	// media downloads; every call carries its own deadline instead.
	cli.Client = cfg.HTTPClient
	cli.UserAgent = "gatewayd " + mautrix.DefaultUserAgent
	a := &Adapter{cfg: cfg, log: cfg.Logger, cli: cli, ready: make(chan struct{}), me: id.UserID(cfg.UserID)}
	a.SetAllowlist(cfg.AllowedUsers, cfg.AllowedRooms)
	return a, nil
}

// Name is the platform name used in addresses.
func (a *Adapter) Name() string { return PlatformName }

// Ready is closed after whoami succeeded and the first /sync returned.
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// SetAllowlist replaces the allowed users and rooms (the daemon's SIGHUP
// reload); an empty room list allows every room.
func (a *Adapter) SetAllowlist(users, rooms []string) {
	u := make(map[string]bool, len(users))
	for _, s := range users {
		u[s] = true
	}
	r := make(map[string]bool, len(rooms))
	for _, s := range rooms {
		r[s] = true
	}
	a.mu.Lock()
	a.users, a.rooms = u, r
	a.mu.Unlock()
}

// Run syncs and delivers until ctx ends.
func (a *Adapter) Run(ctx context.Context, sink gateway.Sink) error {
	<-ctx.Done()
	return nil
}
