package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// KeeperOptions configure a Keeper.
type KeeperOptions struct {
	// TTL is what each renewal extends a lease to; it must be positive.
	TTL time.Duration
	// Interval between renewals; zero means TTL/3, so two renewals may
	// fail before a lease runs out.
	Interval time.Duration
	// OnLost is called, from the keeper's goroutine, once per lease that is
	// lost: taken by another holder (err matches ErrLeaseLost) or not
	// renewed for a whole TTL (the database unreachable), after which
	// another node may hold it. The holder must stop writing. Required.
	OnLost func(l Lease, err error)
	// OnRenew, if set, is called after each successful renewal.
	OnRenew func(l Lease)
}

// Keeper renews a node's held leases in the background until Stop.
type Keeper struct {
	node *Node
	opts KeeperOptions

	mu     sync.Mutex
	leases map[string]keptLease

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

type keptLease struct {
	lease Lease
	// renewedAt is when the last successful renewal (or the acquisition)
	// was sent, by this process's monotonic clock: the lease lasts at
	// least TTL from then.
	renewedAt time.Time
}

// StartKeeper starts renewing the leases handed to Hold.
func (n *Node) StartKeeper(opts KeeperOptions) (*Keeper, error) {
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("cluster: keeper: ttl must be positive, got %v", opts.TTL)
	}
	if opts.OnLost == nil {
		return nil, errors.New("cluster: keeper: OnLost is required")
	}
	if opts.Interval <= 0 {
		opts.Interval = opts.TTL / 3
	}
	k := &Keeper{
		node:   n,
		opts:   opts,
		leases: map[string]keptLease{},
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go k.run()
	return k, nil
}

// Hold starts renewing l, acquired (or last renewed) just now.
func (k *Keeper) Hold(l Lease) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.leases[l.Name] = keptLease{lease: l, renewedAt: time.Now()}
}

// Drop stops renewing the lease name (before releasing it, say).
func (k *Keeper) Drop(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.leases, name)
}

// Held lists the leases being renewed.
func (k *Keeper) Held() []Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]Lease, 0, len(k.leases))
	for _, kl := range k.leases {
		out = append(out, kl.lease)
	}
	return out
}

// Stop ends the renewals and waits for the goroutine. The leases stay
// held in the database until they expire or are released.
func (k *Keeper) Stop() {
	k.stopOnce.Do(func() { close(k.stop) })
	<-k.done
}

func (k *Keeper) run() {
	defer close(k.done)
	ticker := time.NewTicker(k.opts.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-ticker.C:
			k.renewAll()
		}
	}
}

func (k *Keeper) renewAll() {
	for _, kl := range k.snapshot() {
		select {
		case <-k.stop:
			return
		default:
		}
		k.renewOne(kl)
	}
}

func (k *Keeper) snapshot() []keptLease {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]keptLease, 0, len(k.leases))
	for _, kl := range k.leases {
		out = append(out, kl)
	}
	return out
}

func (k *Keeper) renewOne(kl keptLease) {
	sent := time.Now()
	// A renewal slower than an interval is as good as failed; bounding it
	// keeps one hung call from starving the other leases.
	ctx, cancel := context.WithTimeout(context.Background(), k.opts.Interval)
	err := k.node.Renew(ctx, kl.lease, k.opts.TTL)
	cancel()
	switch {
	case err == nil:
		if k.update(kl.lease, sent) && k.opts.OnRenew != nil {
			k.opts.OnRenew(kl.lease)
		}
	case errors.Is(err, ErrLeaseLost):
		k.lose(kl.lease, err)
	case time.Since(kl.renewedAt) >= k.opts.TTL:
		k.lose(kl.lease, fmt.Errorf("cluster: lease %s not renewed for %v, assuming it lost: %w", kl.lease.Name, k.opts.TTL, err))
	}
	// Other errors: try again next tick, while the lease still has time.
}

// update records a renewal unless the lease was dropped or replaced
// meanwhile.
func (k *Keeper) update(l Lease, sent time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	cur, ok := k.leases[l.Name]
	if !ok || cur.lease != l {
		return false
	}
	k.leases[l.Name] = keptLease{lease: l, renewedAt: sent}
	return true
}

func (k *Keeper) lose(l Lease, err error) {
	k.mu.Lock()
	cur, ok := k.leases[l.Name]
	if ok && cur.lease == l {
		delete(k.leases, l.Name)
	}
	k.mu.Unlock()
	if ok && cur.lease == l {
		k.opts.OnLost(l, err)
	}
}
