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

// The whole life of a lane's lease in real time: kept alive past its TTL by
// renewals, taken over once its holder freezes, and the frozen holder,
// waking, is refused by the database and told to step down.
func TestKeeperKeepsLeaseAndFrozenHolderStepsDown(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	mustExec(t, openDB(t, dsn), createJournal)
	a, b := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	const ttl = 600 * time.Millisecond

	held := mustAcquire(t, a, "lane", ttl)
	keeper, _, renewed := startKeeper(t, a, ttl, 0)
	keeper.Hold(held)
	// Four renewals at ttl/3 span more than a TTL: without them the lease
	// would have expired by now.
	for range 4 {
		receive(t, renewed, "a renewal")
	}
	if _, ok, _ := b.Acquire(ctx, "lane", ttl); ok {
		t.Fatal("node-b took a lease that was being renewed")
	}

	keeper.Stop() // node-a freezes, as under SIGSTOP
	taken := waitAcquire(t, b, "lane", ttl)
	if taken.Token <= held.Token {
		t.Fatalf("takeover token %d, want > %d", taken.Token, held.Token)
	}

	// node-a wakes with its keeper and its old token.
	if err := writeJournal(ctx, a.db, held, "a-after-wake"); !errors.Is(err, ErrFenced) {
		t.Fatalf("woken ex-owner's write: err = %v, want ErrFenced", err)
	}
	woken, lost, _ := startKeeper(t, a, ttl, 0)
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

// waitAcquire retries Acquire until the lease's TTL has run out on the
// database's clock and n takes it.
func waitAcquire(t *testing.T, n *Node, name string, ttl time.Duration) Lease {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		l, ok, err := n.Acquire(testContext(t), name, ttl)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if ok {
			return l
		}
		time.Sleep(ttl / 20) // the expiry is on the database's clock; poll it
	}
	t.Fatalf("%s never took lease %q", n.ID(), name)
	return Lease{}
}
