package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

func TestOffsetIsNotConfirmedUntilDeliverSucceeds(t *testing.T) {
	h := newHarness(t)
	sink := newSink()
	sink.fail = func(n int) bool { return n <= 2 }
	h.start(t, h.config(t), sink)

	m := &models.Message{ID: 7, From: &alice, Chat: aliceDM, Date: int(time.Now().Unix()), Text: "keep me"}
	uid := h.srv.Queue(&models.Update{Message: m})
	got := sink.waitN(t, 1)
	if got[0].MessageID != messageID(aliceDM.ID, 7) || sink.attemptCount() != 3 {
		t.Fatalf("delivered %+v after %d attempts, want the message after 3", got, sink.attemptCount())
	}
	h.srv.WaitFor(waitLimit, "confirmation", func() bool { return h.srv.Pending() == 0 })

	// The update was fetched once per attempt: three polls with an offset
	// that did not pass it, and the first one past it is uid+1.
	offs := h.srv.Offsets()
	unconfirmed, firstPast := 0, int64(-1)
	for _, o := range offs {
		if o <= uid {
			unconfirmed++
		} else if firstPast < 0 {
			firstPast = o
		}
	}
	if unconfirmed < 3 || firstPast != uid+1 {
		t.Fatalf("offsets %v for update %d: want >= 3 polls not passing it, then %d", offs, uid, uid+1)
	}
	if c := h.cursor.get(CursorName); c != strconv.FormatInt(uid+1, 10) {
		t.Fatalf("persisted cursor %q, want %d", c, uid+1)
	}
}

func TestRestartBetweenFetchAndCommitLosesNothing(t *testing.T) {
	h := newHarness(t)

	// First process: the gateway dies before committing (Deliver fails).
	down := newSink()
	down.fail = func(int) bool { return true }
	_, stop := h.start(t, h.config(t), down)
	m1 := h.srv.Text(forum, alice, 42, mention+"first", nil)
	down.waitAttempts(t, 1)
	stop()
	if h.srv.Pending() != 1 {
		t.Fatalf("pending = %d; the failed update must stay unconfirmed", h.srv.Pending())
	}

	// Second process: same cursor store, working gateway.
	up := newSink()
	_, stop = h.start(t, h.config(t), up)
	got := up.waitN(t, 1)
	if got[0].MessageID != messageID(forum.ID, m1.ID) || got[0].Text != "first" {
		t.Fatalf("after restart got %+v, want the first message", got[0])
	}
	m2 := h.srv.Text(forum, alice, 42, mention+"second", nil)
	if got := up.waitN(t, 2); got[1].MessageID != messageID(forum.ID, m2.ID) {
		t.Fatalf("second message = %+v", got[1])
	}
	h.srv.WaitFor(waitLimit, "cursor persisted", func() bool { return h.cursor.get(CursorName) != "" && h.srv.Pending() == 0 })
	stop()

	// Third process starts from the persisted cursor.
	cursor := h.cursor.get(CursorName)
	before := len(h.srv.Offsets())
	_, stop = h.start(t, h.config(t), newSink())
	h.srv.WaitFor(waitLimit, "first poll", func() bool { return len(h.srv.Offsets()) > before })
	if first := h.srv.Offsets()[before]; strconv.FormatInt(first, 10) != cursor {
		t.Fatalf("restarted at offset %d, want the persisted %s", first, cursor)
	}
	stop()
}

func TestRedeliveryAfterCommitCarriesTheSameMessageID(t *testing.T) {
	h := newHarness(t)
	// The gateway commits, then the process dies before the offset reaches
	// Telegram: modelled by a sink that records and still reports failure.
	committed := newSink()
	committed.fail = func(int) bool { return true }
	_, stop := h.start(t, h.config(t), committed)
	h.srv.Text(aliceDM, alice, 0, "once", nil)
	committed.waitAttempts(t, 1)
	stop()

	again := newSink()
	h.start(t, h.config(t), again)
	got := again.waitN(t, 1)
	committed.mu.Lock()
	first := committed.attempts[0]
	committed.mu.Unlock()
	if got[0].MessageID != first.MessageID || got[0].Address.Platform != first.Address.Platform {
		t.Fatalf("redelivery id %s/%s differs from %s/%s: the gateway could not dedupe it",
			got[0].Address.Platform, got[0].MessageID, first.Address.Platform, first.MessageID)
	}
}

func TestUpdatesAreDeliveredInOrder(t *testing.T) {
	h := newHarness(t)
	sink := newSink()
	// A slow gateway must not let later updates overtake earlier ones.
	gate := make(chan struct{})
	slow := sinkFunc(func(ctx context.Context, in gateway.Inbound) error {
		if in.Text == "0" {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		_, err := sink.Deliver(ctx, in)
		return err
	})
	h.start(t, h.config(t), slow)
	const n = 20
	for i := range n {
		h.srv.Text(forum, alice, 42+i%2, "/x@gatewayd_test_bot "+strconv.Itoa(i), nil)
	}
	close(gate)
	got := sink.waitN(t, n)
	for i, in := range got {
		if in.Text != "/x "+strconv.Itoa(i) {
			t.Fatalf("delivery %d is %q; order broken", i, in.Text)
		}
	}
}

type sinkFunc func(ctx context.Context, in gateway.Inbound) error

func (f sinkFunc) Deliver(ctx context.Context, in gateway.Inbound) (bool, error) {
	return false, f(ctx, in)
}

func TestPollRecoversFromServerErrors(t *testing.T) {
	h := newHarness(t)
	h.srv.Fail("getUpdates", telegramFailure(502))
	h.srv.Fail("getUpdates", telegramFailure(429))
	_, sink := h.startDefault(t)
	h.srv.Text(aliceDM, alice, 0, "through", nil)
	if got := sink.waitN(t, 1); got[0].Text != "through" {
		t.Fatalf("got %+v", got[0])
	}
}

func TestCallbackInaccessibleMessageAndNoText(t *testing.T) {
	h := newHarness(t)
	_, sink := h.startDefault(t)
	// A sticker (no text) and a photo with a caption.
	h.srv.Queue(&models.Update{Message: &models.Message{ID: 900, From: &alice, Chat: aliceDM, Date: int(time.Now().Unix())}})
	h.srv.Queue(&models.Update{Message: &models.Message{ID: 901, From: &alice, Chat: aliceDM, Date: int(time.Now().Unix()), Caption: "look at this"}})
	got := sink.waitN(t, 1)
	if got[0].Text != "look at this" || got[0].MessageID != messageID(aliceDM.ID, 901) {
		t.Fatalf("got %+v, want only the captioned photo", got[0])
	}
}

func telegramFailure(code int) telegramtest.Failure {
	return telegramtest.Failure{Code: code, Description: http.StatusText(code)}
}

// failingPolls fails every getUpdates at the transport level, the way a
// network error would, and passes other methods through.
type failingPolls struct{ polls chan struct{} }

func (f failingPolls) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/getUpdates") {
		select {
		case f.polls <- struct{}{}:
		default:
		}
		return nil, errors.New("connection reset by peer")
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestNetworkErrorsNeverLogTheToken(t *testing.T) {
	h := newHarness(t)
	core, logs := observer.New(zap.DebugLevel)
	cfg := h.config(t)
	cfg.Logger = zap.New(core)
	polls := make(chan struct{}, 1)
	cfg.HTTPClient = &http.Client{Transport: failingPolls{polls: polls}}
	_, stop := h.start(t, cfg, newSink())
	for range 3 {
		select {
		case <-polls:
		case <-time.After(waitLimit):
			t.Fatal("no poll attempts")
		}
	}
	stop()
	failures := 0
	for _, e := range logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, "TEST-token") {
			t.Fatalf("log line leaks the token: %s", line)
		}
		if strings.Contains(line, "connection reset") {
			failures++
		}
	}
	if failures == 0 {
		t.Fatal("the poll failures were not logged")
	}
}

// With a PollGate (cluster mode), getUpdates waits for the election, stops
// when the held context ends, and after the next election starts from the
// offset in the cursor, which another node's poller moved on meanwhile.
func TestPollGateOnlyTheElectedNodePolls(t *testing.T) {
	h := newHarness(t)
	sink := newSink()
	elect := make(chan struct{})
	held := make(chan context.CancelFunc, 2)
	cfg := h.config(t)
	cfg.PollGate = func(ctx context.Context) (context.Context, CursorStore, error) {
		select {
		case <-elect:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		c, cancel := context.WithCancel(ctx)
		held <- cancel
		return c, nil, nil
	}
	h.start(t, cfg, sink)
	uid := h.srv.Queue(&models.Update{Message: &models.Message{ID: 1, From: &alice, Chat: aliceDM, Date: int(time.Now().Unix()), Text: "one"}})
	// Not elected: the adapter is set up, but nobody asks for updates.
	h.srv.WaitFor(waitLimit, "setup", func() bool { return h.srv.Calls("setMyCommands") > 0 })
	if n := h.srv.Calls("getUpdates"); n != 0 {
		t.Fatalf("getUpdates called %d times before the election", n)
	}
	elect <- struct{}{}
	sink.waitN(t, 1)
	(<-held)() // the lease is lost
	// Another node's poller confirmed a later update meanwhile.
	if err := h.cursor.SetCursor(context.Background(), CursorName, strconv.FormatInt(uid+5, 10)); err != nil {
		t.Fatal(err)
	}
	elect <- struct{}{}
	// The old poller's long poll may still be recorded after the lease was
	// lost, so wait for the new one's offset rather than for any call.
	h.srv.WaitFor(waitLimit, "a poll from the cursor after the second election", func() bool {
		return slices.Contains(h.srv.Offsets(), uid+5)
	})
	if offs := h.srv.Offsets(); slices.ContainsFunc(offs, func(o int64) bool { return o > uid+1 && o != uid+5 }) {
		t.Errorf("offsets %v: after re-election the poller must start from the cursor's %d", offs, uid+5)
	}
}

// stolenCursor is an election's cursor store after another node took the
// poller lease: reads work, every write is refused.
type stolenCursor struct{ CursorStore }

func (stolenCursor) SetCursor(context.Context, string, string) error {
	return fmt.Errorf("%w: lease telegram:poller taken by node-b", ErrNotPoller)
}

// A poller whose offset write is refused because another node polls now
// (ErrNotPoller from the election's cursor store) stops polling and waits
// at the gate again, without waiting for its held context to end (the
// keeper notices a lost lease only at its next renewal); the offset is
// written nowhere else meanwhile.
func TestPollerStepsDownWhenItsOffsetWriteIsRefused(t *testing.T) {
	h := newHarness(t)
	sink := newSink()
	entered := make(chan int, 4)
	elections := 0
	cfg := h.config(t)
	cfg.PollGate = func(ctx context.Context) (context.Context, CursorStore, error) {
		elections++ // only the poller's goroutine calls the gate
		entered <- elections
		if elections > 1 {
			<-ctx.Done() // the other node keeps the lease
			return nil, nil, ctx.Err()
		}
		return ctx, stolenCursor{h.cursor}, nil // held until shutdown
	}
	h.start(t, cfg, sink)
	h.srv.Queue(&models.Update{Message: &models.Message{ID: 1, From: &alice, Chat: aliceDM, Date: int(time.Now().Unix()), Text: "one"}})
	sink.waitN(t, 1)
	if n := <-entered; n != 1 {
		t.Fatalf("gate entry %d, want the first", n)
	}
	select {
	case <-entered:
	case <-time.After(waitLimit):
		t.Fatal("the poller went on polling after its offset write was refused")
	}
	if c := h.cursor.get(CursorName); c != "" {
		t.Errorf("cursor = %q, want it untouched by the deposed poller", c)
	}
}

// TestOffsetIsSavedOncePerBatch: the updates of one getUpdates answer are
// confirmed with one cursor write (a durable commit each), not one per
// update, and the cursor still ends past the last of them.
func TestOffsetIsSavedOncePerBatch(t *testing.T) {
	h := newHarness(t)
	var last int64
	for i := range 3 {
		m := &models.Message{ID: 20 + i, From: &alice, Chat: aliceDM, Date: int(time.Now().Unix()), Text: fmt.Sprint("batch ", i)}
		last = h.srv.Queue(&models.Update{Message: m})
	}
	sink := newSink()
	h.start(t, h.config(t), sink)
	sink.waitN(t, 3)
	want := strconv.FormatInt(last+1, 10)
	h.srv.WaitFor(waitLimit, "cursor past the batch", func() bool { return h.cursor.get(CursorName) == want })
	if n := h.cursor.setCalls(); n != 1 {
		t.Errorf("%d cursor writes for one batch of 3 updates, want 1", n)
	}
}

// TestOffsetSavesAreSpacedAndFlushedOnStop: batches that come within
// cursorSaveInterval of the last cursor write are not each written (a
// durable commit per message under load); the latest offset is written
// when polling stops, so a restart starts past every delivered update.
func TestOffsetSavesAreSpacedAndFlushedOnStop(t *testing.T) {
	h := newHarness(t)
	frozen := time.Now()
	cfg := h.config(t)
	cfg.Now = func() time.Time { return frozen } // no interval ever passes
	sink := newSink()
	_, stop := h.start(t, cfg, sink)
	var last int64
	for i := range 3 {
		m := &models.Message{ID: 30 + i, From: &alice, Chat: aliceDM, Date: int(frozen.Unix()), Text: fmt.Sprint("one by one ", i)}
		last = h.srv.Queue(&models.Update{Message: m})
		sink.waitN(t, i+1) // its own batch: the next is queued after it was delivered
	}
	stop()
	if got, want := h.cursor.get(CursorName), strconv.FormatInt(last+1, 10); got != want {
		t.Errorf("cursor after stop %q, want %s", got, want)
	}
	// The first batch is written at once (nothing was saved yet), the
	// other two only by the flush at stop.
	if n := h.cursor.setCalls(); n != 2 {
		t.Errorf("%d cursor writes for 3 batches within one interval, want 2", n)
	}
}
