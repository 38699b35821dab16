package outbox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

const laneA = "v1:test:a"

var addrA = chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}

// recordingStore is the real store, with the outcomes the deliverer
// records kept for the test and Enqueue failing on demand.
type recordingStore struct {
	*store.Store
	mu         sync.Mutex
	failed     map[int64]string
	sent       map[int64]string
	enqueueErr error
}

func (s *recordingStore) MarkFailed(ctx context.Context, id int64, why string) error {
	s.mu.Lock()
	s.failed[id] = why
	s.mu.Unlock()
	return s.Store.MarkFailed(ctx, id, why)
}

func (s *recordingStore) MarkSent(ctx context.Context, id int64, platformMessageID string) error {
	s.mu.Lock()
	s.sent[id] = platformMessageID
	s.mu.Unlock()
	return s.Store.MarkSent(ctx, id, platformMessageID)
}

func (s *recordingStore) Enqueue(ctx context.Context, m store.OutboxMessage) (int64, error) {
	if s.enqueueErr != nil {
		return 0, s.enqueueErr
	}
	return s.Store.Enqueue(ctx, m)
}

func openStore(t *testing.T) *recordingStore {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "gatewayd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.EnsureLane(ctx, store.LaneKey{SessionKey: laneA, Platform: "test", Kind: "api", ChatID: "a"}); err != nil {
		t.Fatal(err)
	}
	return &recordingStore{Store: st, failed: map[int64]string{}, sent: map[int64]string{}}
}

// fakeTransport answers each row with send's answer and records what it
// was given.
type fakeTransport struct {
	send   func(m store.OutboxMessage) (string, error)
	rows   []string
	direct []string
}

func (f *fakeTransport) SendRow(_ context.Context, m store.OutboxMessage, _ *Parts) (string, error) {
	f.rows = append(f.rows, m.Text)
	return f.send(m)
}

func (f *fakeTransport) SendDirect(_ context.Context, _ chat.Address, _, _, text string) {
	f.direct = append(f.direct, text)
}

// countingObserver counts the sends the deliverer reports.
type countingObserver struct{ sends, errs int }

func (o *countingObserver) Outbound(_ string, err error) {
	o.sends++
	if err != nil {
		o.errs++
	}
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestDeliverer(t *testing.T, send func(store.OutboxMessage) (string, error)) (*Deliverer, *recordingStore, *fakeTransport, *countingObserver, *fakeClock) {
	t.Helper()
	st := openStore(t)
	tr := &fakeTransport{send: send}
	obs := &countingObserver{}
	clock := &fakeClock{t: time.Now().Add(time.Minute)} // after every row the test enqueues
	return New(st, tr, nil, zap.NewNop(), obs, clock.now), st, tr, obs, clock
}

func enqueue(t *testing.T, st Store, text string) int64 {
	t.Helper()
	id, err := st.Enqueue(context.Background(), Notice(addrA, "", text))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A row whose platform does not run here fails at once with the reason,
// and no send is counted: nothing was sent.
func TestRowWithoutItsPlatformFailsUncounted(t *testing.T) {
	d, st, _, obs, _ := newTestDeliverer(t, func(m store.OutboxMessage) (string, error) {
		return "", &NoPlatformError{Platform: m.Platform}
	})
	id := enqueue(t, st, "hello")
	d.DeliverDue(context.Background())
	if got := st.failed[id]; got != `no platform "test"` {
		t.Errorf("failed why %q, want %q", got, `no platform "test"`)
	}
	if obs.sends != 0 {
		t.Errorf("counted %d sends, want none", obs.sends)
	}
}

// A failed row holds back its lane's later rows until its retry is due,
// so the lane's messages keep their order.
func TestRetryKeepsTheLaneInOrder(t *testing.T) {
	calls := 0
	d, st, tr, obs, clock := newTestDeliverer(t, func(store.OutboxMessage) (string, error) {
		calls++
		if calls == 1 {
			return "", errors.New("connection reset")
		}
		return fmt.Sprintf("pm-%d", calls), nil
	})
	first, second := enqueue(t, st, "first"), enqueue(t, st, "second")
	ctx := context.Background()
	d.DeliverDue(ctx)
	if fmt.Sprint(tr.rows) != "[first]" {
		t.Fatalf("sent %v; the second row must wait behind the failed first", tr.rows)
	}
	d.DeliverDue(ctx)
	if len(tr.rows) != 1 {
		t.Fatalf("retried before the retry was due: %v", tr.rows)
	}
	clock.t = clock.t.Add(MaxRetryDelay(0))
	d.DeliverDue(ctx)
	if fmt.Sprint(tr.rows) != "[first first second]" || st.sent[first] != "pm-2" || st.sent[second] != "pm-3" {
		t.Fatalf("sent %v, marked %v; want first retried, then second", tr.rows, st.sent)
	}
	if obs.sends != 3 || obs.errs != 1 {
		t.Errorf("counted %d sends, %d failed; want 3, 1", obs.sends, obs.errs)
	}
}

// A deferred row is held (not due, not blocking the lane) until the
// platform asks for the lane's rows again.
func TestDeferredRowIsHeldUntilRedelivered(t *testing.T) {
	deferNext := true
	d, st, tr, _, _ := newTestDeliverer(t, func(m store.OutboxMessage) (string, error) {
		if m.Text == "held" && deferNext {
			deferNext = false
			return "", ErrDeferred
		}
		return "pm-" + m.Text, nil
	})
	held := enqueue(t, st, "held")
	later := enqueue(t, st, "later")
	ctx := context.Background()
	d.DeliverDue(ctx)
	if fmt.Sprint(tr.rows) != "[held later]" || st.sent[later] != "pm-later" {
		t.Fatalf("sent %v, marked %v; the deferred row must not hold back the next", tr.rows, st.sent)
	}
	d.DeliverDue(ctx)
	if len(tr.rows) != 2 {
		t.Fatalf("a held row was sent again unasked: %v", tr.rows)
	}
	if err := d.Redeliver(ctx, laneA); err != nil {
		t.Fatal(err)
	}
	d.DeliverDue(ctx)
	if st.sent[held] != "pm-held" {
		t.Fatalf("after Redeliver the held row is %q, want sent", st.sent[held])
	}
}

// A notice the outbox cannot take is sent straight to the platform.
func TestNotifyFallsBackToADirectSend(t *testing.T) {
	d, st, tr, _, _ := newTestDeliverer(t, func(store.OutboxMessage) (string, error) { return "", nil })
	st.enqueueErr = errors.New("disk full")
	d.Notify(context.Background(), addrA, "", "hello")
	if fmt.Sprint(tr.direct) != "[hello]" {
		t.Errorf("direct sends %v, want the notice", tr.direct)
	}
}

// Without a files store nothing is enqueued as a file.
func TestSendDataWithoutFilesStore(t *testing.T) {
	d, _, _, _, _ := newTestDeliverer(t, func(store.OutboxMessage) (string, error) { return "", nil })
	if err := d.SendData(context.Background(), addrA, "", ext.File{Name: "a.txt", Data: []byte("x")}); !errors.Is(err, ErrFileNotSent) {
		t.Errorf("SendData = %v, want ErrFileNotSent", err)
	}
}

func TestRetryDelayDoublesToItsCapWithJitter(t *testing.T) {
	tests := []struct {
		attempts int
		full     time.Duration
	}{
		{0, 2 * time.Second}, {3, 16 * time.Second}, {40, 5 * time.Minute},
	}
	for _, tt := range tests {
		if got := MaxRetryDelay(tt.attempts); got != tt.full {
			t.Errorf("full delay after %d failures = %v, want %v", tt.attempts, got, tt.full)
		}
		if got := retryDelay(tt.attempts); got > tt.full || got < tt.full*8/10 {
			t.Errorf("delay after %d failures = %v, want within 80-100%% of %v", tt.attempts, got, tt.full)
		}
	}
}

// A part the platform accepted in the send's grace period, after the
// send's own deadline, is still recorded: else the retry sends it again.
func TestPartIsRecordedAfterTheSendDeadline(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "gatewayd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.EnsureLane(ctx, store.LaneKey{SessionKey: laneA, Platform: "test", Kind: "api", ChatID: "a"}); err != nil {
		t.Fatal(err)
	}
	id, err := st.Enqueue(ctx, store.OutboxMessage{SessionKey: laneA, Platform: "test", Kind: "api", ChatID: "a", Text: "a\nb"})
	if err != nil {
		t.Fatal(err)
	}
	expired, cancel := context.WithCancel(ctx)
	cancel() // the send's deadline passed while part 0 was on the wire
	if err := (&Parts{st: st, id: id}).RecordPart(expired, 0, "m1"); err != nil {
		t.Fatalf("RecordPart after the send deadline: %v", err)
	}
	rows, err := st.DueOutbox(ctx, time.Now().Add(time.Minute), 10)
	if err != nil || len(rows) != 1 || len(rows[0].SentParts) != 1 {
		t.Fatalf("due rows %+v, %v; want the row with part 0 recorded", rows, err)
	}
}
