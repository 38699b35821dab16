package exttest

import (
	"context"
	"sync"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// Rename is one place a feature renamed (RenamePlace).
type Rename struct {
	Addr chat.Address
	Name string
}

// Names records ext.NameHooks: the rename hooks a feature registered,
// which a test runs through Renamed, and the places it renamed.
type Names struct {
	// RenameErr, when set, is RenamePlace's answer (nothing is recorded).
	RenameErr error

	mu      sync.Mutex
	hooks   []func(ctx context.Context, in chat.Inbound)
	renames []Rename
}

func (n *Names) OnRenamed(fn func(ctx context.Context, in chat.Inbound)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hooks = append(n.hooks, fn)
}

func (n *Names) RenamePlace(_ context.Context, addr chat.Address, name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.RenameErr != nil {
		return n.RenameErr
	}
	n.renames = append(n.renames, Rename{Addr: addr, Name: name})
	return nil
}

// Renamed hands a rename of the place at addr to name to the registered
// hooks, as an adapter's delivery does.
func (n *Names) Renamed(ctx context.Context, addr chat.Address, name string) {
	n.mu.Lock()
	hooks := append([]func(ctx context.Context, in chat.Inbound){}, n.hooks...)
	n.mu.Unlock()
	for _, fn := range hooks {
		fn(ctx, chat.Inbound{Address: addr, Title: name, Renamed: true})
	}
}

// Renames are the places renamed, in order.
func (n *Names) Renames() []Rename {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Rename(nil), n.renames...)
}
