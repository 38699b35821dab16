package cluster

import (
	"errors"
	"testing"
	"time"
)

type lossReport struct {
	lease Lease
	err   error
}

// startKeeper starts a keeper for n whose losses and renewals arrive on the
// returned channels; it is stopped at cleanup.
func startKeeper(t *testing.T, n *Node, ttl, interval time.Duration) (*Keeper, <-chan lossReport, <-chan Lease) {
	t.Helper()
	lost := make(chan lossReport, 8)
	renewed := make(chan Lease, 64)
	k, err := n.StartKeeper(KeeperOptions{
		TTL:      ttl,
		Interval: interval,
		OnLost:   func(l Lease, err error) { lost <- lossReport{l, err} },
		OnRenew: func(l Lease) {
			select {
			case renewed <- l:
			default: // the test reads only the first few
			}
		},
	})
	if err != nil {
		t.Fatalf("StartKeeper: %v", err)
	}
	t.Cleanup(k.Stop)
	return k, lost, renewed
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// The whole life of a lane's lease: kept alive by renewals past several
// TTLs of database time, taken over once its holder freezes, and the
// frozen holder, waking, is refused by the database and told to step down.
func TestKeeperKeepsLeaseAndFrozenHolderStepsDown(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	clock := installTestClock(t, dsn)
	mustExec(t, openDB(t, dsn), createJournal)
	a, b := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	const ttl = 10 * time.Second

	held := mustAcquire(t, a, "lane", ttl)
	keeper, _, renewed := startKeeper(t, a, ttl, 50*time.Millisecond)
	keeper.Hold(held)
	// Three times most of a TTL passes on the database's clock: without
	// the renewals in between the lease would have expired.
	for range 3 {
		clock.Advance(ttl * 9 / 10)
		renewalAfterNow(t, renewed)
	}
	if _, ok, _ := b.Acquire(ctx, "lane", ttl); ok {
		t.Fatal("node-b took a lease that was being renewed")
	}

	keeper.Stop() // node-a freezes, as under SIGSTOP
	clock.Advance(ttl)
	taken := mustAcquire(t, b, "lane", ttl)
	if taken.Token <= held.Token {
		t.Fatalf("takeover token %d, want > %d", taken.Token, held.Token)
	}

	// node-a wakes with its keeper and its old token.
	if err := writeJournal(ctx, a.db, held, "a-after-wake"); !errors.Is(err, ErrFenced) {
		t.Fatalf("woken ex-owner's write: err = %v, want ErrFenced", err)
	}
	woken, lost, _ := startKeeper(t, a, ttl, 50*time.Millisecond)
	woken.Hold(held)
	report := receive(t, lost, "the loss report")
	if !errors.Is(report.err, ErrLeaseLost) || report.lease != held {
		t.Errorf("loss report = %+v, want lease %+v with ErrLeaseLost", report, held)
	}
	if got := woken.Held(); len(got) != 0 {
		t.Errorf("keeper still holds %v after reporting the loss", got)
	}
	if got := journalEntries(t, a.db); len(got) != 0 {
		t.Errorf("journal = %v, want no write from the ex-owner", got)
	}
}

// renewalAfterNow waits for a renewal that began after the call: renewals
// run one at a time, so after draining the signals already sent, the
// second one received started after the first, which started after now at
// the earliest.
func renewalAfterNow(t *testing.T, renewed <-chan Lease) {
	t.Helper()
	drain(renewed)
	receive(t, renewed, "a renewal")
	receive(t, renewed, "a renewal")
}

func drain[T any](ch <-chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// When the database cannot be reached for a whole TTL, the keeper cannot
// know whether the lease is still held, so it reports it lost.
func TestKeeperReportsLossWhenRenewalsFailForATTL(t *testing.T) {
	dsn := newDatabase(t)
	a := newNode(t, dsn, "node-a")
	const ttl = 300 * time.Millisecond
	held := mustAcquire(t, a, "lane", ttl)
	a.db.Close() // every renewal now fails
	keeper, lost, _ := startKeeper(t, a, ttl, 0)
	keeper.Hold(held)
	report := receive(t, lost, "the loss report")
	if report.lease != held || report.err == nil || errors.Is(report.err, ErrLeaseLost) {
		t.Errorf("loss report = %+v, want lease %+v lost by timeout", report, held)
	}
}

func TestKeeperOptionsAreChecked(t *testing.T) {
	a := newNode(t, newDatabase(t), "node-a")
	if _, err := a.StartKeeper(KeeperOptions{TTL: time.Second}); err == nil {
		t.Error("StartKeeper without OnLost: want an error")
	}
	if _, err := a.StartKeeper(KeeperOptions{OnLost: func(Lease, error) {}}); err == nil {
		t.Error("StartKeeper without a TTL: want an error")
	}
}
