package cluster

import (
	"context"
	"database/sql"
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
// stops answering leaves them unrenewed together, and they are reported
// lost (or lapsed) together once their TTL has passed, not one per
// timeout. A renewal that gets no answer is not abandoned when a lease
// lapses: it stays under way on the keeper's own connection, so a
// database that was frozen runs it the moment it thaws, before another
// node, which needs several round trips for it, can take the leases.
type Keeper struct {
	node *Node
	opts KeeperOptions

	mu     sync.Mutex
	leases map[string]keptLease

	// conn is the keeper's own connection, used by one renewal at a time
	// (the one under way, or none); nil until the first and after a
	// renewal failed on it.
	conn *sql.Conn

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

// renewal is the outcome of one renewal of the leases held when it was
// sent.
type renewal struct {
	sent time.Time
	res  Renewal
	err  error
}

// errNoAnswer is why leases lapse while their renewal is still under way.
var errNoAnswer = errors.New("cluster: the database has not answered the renewal")

func (k *Keeper) run() {
	defer close(k.done)
	timer := time.NewTimer(k.opts.Interval)
	defer timer.Stop()
	var pending <-chan renewal // the renewal under way; nil if none
	for {
		select {
		case <-k.stop:
			if pending != nil {
				<-pending // cut off by the cancelled context
			}
			k.closeConn()
			return
		case r := <-pending:
			pending = nil
			timer.Reset(k.received(r))
			continue
		case <-timer.C:
		}
		if pending == nil {
			pending = k.send()
		} else {
			k.lapseOverdue(errNoAnswer)
		}
		timer.Reset(k.untilOverdue())
	}
}

// Bounds on waiting: the floor keeps the loop from spinning on a deadline
// just past; a renewal is given up (its connection closed) only after
// giveUpAfter or two TTLs, far past any lease it renews, so an outage
// shorter than that ends with the renewal landing at once.
const (
	minWait      = 10 * time.Millisecond
	giveUpAfter  = 30 * time.Second
	retryDivisor = 4 // a failed renewal is tried again Interval/4 later
)

// send starts renewing every lease held, in one statement, on the keeper's
// connection; nil when none is held.
func (k *Keeper) send() <-chan renewal {
	held := k.snapshot()
	if len(held) == 0 {
		return nil
	}
	leases := make([]Lease, len(held))
	for i, kl := range held {
		leases[i] = kl.lease
	}
	out := make(chan renewal, 1)
	sent := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(k.ctx, max(giveUpAfter, 2*k.opts.TTL))
		defer cancel()
		res, err := k.renewOnConn(ctx, leases)
		out <- renewal{sent: sent, res: res, err: err}
	}()
	return out
}

// renewOnConn renews on the keeper's connection, opening one if need be
// and dropping it after a failure (the next renewal gets a new one).
func (k *Keeper) renewOnConn(ctx context.Context, leases []Lease) (Renewal, error) {
	if k.conn == nil {
		conn, err := k.node.db.Conn(ctx)
		if err != nil {
			return Renewal{}, fmt.Errorf("cluster: renew: %w", err)
		}
		k.conn = conn
	}
	res, err := k.node.renewAllOn(ctx, k.conn, leases, k.opts.TTL)
	if err != nil {
		k.closeConn()
	}
	return res, err
}

func (k *Keeper) closeConn() {
	if k.conn != nil {
		_ = k.conn.Close()
		k.conn = nil
	}
}

// received takes in a renewal's outcome and returns how long to wait
// before the next. A renewal that landed a whole TTL after it was sent
// (the database was frozen meanwhile) did extend the leases in the
// database, but by this process's clock proves nothing: the next one goes
// at once, and its answer brings the lapsed leases back.
func (k *Keeper) received(r renewal) time.Duration {
	late := time.Since(r.sent) >= k.opts.TTL
	for _, l := range r.res.Renewed {
		if !late && k.update(l, r.sent) && k.opts.OnRenew != nil {
			k.opts.OnRenew(l)
		}
	}
	for _, l := range r.res.Lost {
		k.lose(l, fmt.Errorf("%w: %s token %d", ErrLeaseLost, l.Name, l.Token))
	}
	switch {
	case r.err != nil && k.ctx.Err() == nil:
		k.lapseOverdue(r.err)
		return k.opts.Interval / retryDivisor
	case late:
		return minWait
	}
	return k.opts.Interval
}

// untilOverdue is how long until the first lease not yet lapsed has gone
// a TTL without renewal: when to look again while a renewal is under way.
func (k *Keeper) untilOverdue() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	d := k.opts.Interval
	for _, kl := range k.leases {
		if !kl.lapsed {
			d = min(d, time.Until(kl.renewedAt.Add(k.opts.TTL)))
		}
	}
	return max(d, minWait)
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
