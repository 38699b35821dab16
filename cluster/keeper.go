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
	// lost: taken by another holder (err matches ErrLeaseLost) or, without
	// OnLapse, not renewed for a whole TTL (the database unreachable),
	// after which another node may hold it. The holder must stop writing.
	// Required.
	OnLost func(l Lease, err error)
	// OnLapse, if set, is called instead of OnLost for a lease not renewed
	// for a whole TTL, and the keeper goes on renewing it. Another node may
	// hold it by now, so the holder must not act outside the database
	// (its fenced writes stay safe). A later renewal, which succeeds only
	// if no one took the lease meanwhile (any takeover changes the token),
	// calls OnRenew: the lease is the holder's again, token unchanged. A
	// refusal calls OnLost with ErrLeaseLost. Drop gives it up.
	OnLapse func(l Lease, err error)
	// OnRenew, if set, is called after each successful renewal.
	OnRenew func(l Lease)
}

// Keeper renews a node's held leases in the background until Stop: all of
// them in one statement (Node.RenewAll) every Interval, so a database that
// stops answering leaves them unrenewed together, and each attempt is cut
// off when the first lease would run out, so they are reported lost (or
// lapsed) together at the TTL rather than one per timeout.
type Keeper struct {
	node *Node
	opts KeeperOptions

	mu     sync.Mutex
	leases map[string]keptLease

	ctx      context.Context // ends at Stop, cutting off a renewal under way
	cancel   context.CancelFunc
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
	// lapsed: not renewed for a TTL and reported to OnLapse; renewals go
	// on.
	lapsed bool
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
	ctx, cancel := context.WithCancel(context.Background())
	k := &Keeper{
		node:   n,
		opts:   opts,
		leases: map[string]keptLease{},
		ctx:    ctx,
		cancel: cancel,
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

// Held lists the leases being renewed, lapsed ones included.
func (k *Keeper) Held() []Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]Lease, 0, len(k.leases))
	for _, kl := range k.leases {
		out = append(out, kl.lease)
	}
	return out
}

// Stop ends the renewals, cutting off one under way, and waits for the
// goroutine. The leases stay held in the database until they expire or
// are released.
func (k *Keeper) Stop() {
	k.stopOnce.Do(func() {
		close(k.stop)
		k.cancel()
	})
	<-k.done
}

func (k *Keeper) run() {
	defer close(k.done)
	timer := time.NewTimer(k.opts.Interval)
	defer timer.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-timer.C:
		}
		timer.Reset(k.renewAll())
	}
}

// Bounds of an attempt's timeout and of the pause after a failed one: the
// floor keeps an attempt begun just before a lease's end from being cut off
// before it reached the database; the retry comes soon enough that several
// fit in what is left of the TTL.
const (
	minAttempt   = 10 * time.Millisecond
	retryDivisor = 4 // a failed renewal is tried again Interval/4 later
)

// renewAll renews every lease held in one call and returns how long to
// wait before the next.
func (k *Keeper) renewAll() time.Duration {
	held := k.snapshot()
	if len(held) == 0 {
		return k.opts.Interval
	}
	leases := make([]Lease, len(held))
	for i, kl := range held {
		leases[i] = kl.lease
	}
	sent := time.Now()
	ctx, cancel := context.WithTimeout(k.ctx, k.attemptTimeout(held, sent))
	res, err := k.node.RenewAll(ctx, leases, k.opts.TTL)
	cancel()
	for _, l := range res.Renewed {
		if k.update(l, sent) && k.opts.OnRenew != nil {
			k.opts.OnRenew(l)
		}
	}
	for _, l := range res.Lost {
		k.lose(l, fmt.Errorf("%w: %s token %d", ErrLeaseLost, l.Name, l.Token))
	}
	if err == nil || k.ctx.Err() != nil {
		return k.opts.Interval
	}
	k.lapseOverdue(err)
	return k.opts.Interval / retryDivisor
}

// attemptTimeout bounds a renewal sent at sent: an interval (a renewal
// slower than that is as good as failed), and no later than the first
// lease not yet lapsed runs out, so a database that stops answering has
// every lease reported at its TTL, not at the end of a longer wait.
func (k *Keeper) attemptTimeout(held []keptLease, sent time.Time) time.Duration {
	d := k.opts.Interval
	for _, kl := range held {
		if !kl.lapsed {
			d = min(d, kl.renewedAt.Add(k.opts.TTL).Sub(sent))
		}
	}
	return max(d, minAttempt)
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

// lapseOverdue reports, in one pass, every lease not renewed for a TTL:
// to OnLapse, which keeps it, or else to OnLost, which gives it up.
func (k *Keeper) lapseOverdue(cause error) {
	k.mu.Lock()
	var due []Lease
	for name, kl := range k.leases {
		if kl.lapsed || time.Since(kl.renewedAt) < k.opts.TTL {
			continue
		}
		due = append(due, kl.lease)
		if k.opts.OnLapse != nil {
			kl.lapsed = true
			k.leases[name] = kl
		} else {
			delete(k.leases, name)
		}
	}
	k.mu.Unlock()
	for _, l := range due {
		err := fmt.Errorf("cluster: lease %s not renewed for %v, assuming it lost: %w", l.Name, k.opts.TTL, cause)
		if k.opts.OnLapse != nil {
			k.opts.OnLapse(l, err)
		} else {
			k.opts.OnLost(l, err)
		}
	}
}

// update records a renewal unless the lease was dropped or replaced
// meanwhile; a lapsed lease renewed is no longer lapsed.
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
