package gateway_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// /retry through the real stack: the real store, codex app-server and fake
// model, the gateway and the API lane, whose notices wait for the lane's
// next request.

// requestsWith counts the model requests among reqs whose last user
// message contains substr.
func requestsWith(reqs []codextest.Request, substr string) int {
	n := 0
	for _, r := range reqs {
		if strings.Contains(r.LastUserText(), substr) {
			n++
		}
	}
	return n
}

// The API lane after a restart: the cut-off notice, naming the message,
// comes with the answer to the next message; /retry then sends the model
// the cut-off message, not that one; a second /retry runs nothing.
func TestIntegrationRetryAfterHeldNoticeRerunsTheCutOffMessage(t *testing.T) {
	w := newWorld(t)
	const cut = "remember the number 42, then wait for my next question"
	var hang atomic.Bool
	hang.Store(true)
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		if hang.Load() && strings.Contains(req.LastUserText(), cut) {
			return codextest.Reply{HangBeforeHeaders: true}
		}
		return codextest.DefaultReply(req)
	})
	first := w.start(t, gateway.Config{DrainTimeout: 50 * time.Millisecond})
	if r := first.ask(t, "lane", "hello"); r.Status != "completed" {
		t.Fatalf("first answer %+v", r)
	}
	before := len(w.model.Requests())
	asked := make(chan struct{})
	go func() { defer close(asked); _, _ = first.tryAsk("lane", cut) }() // ends with the shutdown
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := w.model.WaitRequests(ctx, before+1); err != nil {
		t.Fatalf("the cut-off turn never reached the model: %v", err)
	}
	first.stop() // the drain times out: the turn is cut off, journaled
	<-asked
	hang.Store(false)

	gw := w.start(t, gateway.Config{})
	gw.waitLogged(t, "api.notice_held", "lane", "lane", 1)
	later := gw.ask(t, "lane", "what is the capital of France?")
	notice := gateway.CutOffNotice(cut)
	if later.Status != "completed" || !slices.Contains(later.Notices, notice) {
		t.Fatalf("the answer after the restart %+v, want it to carry the cut-off notice %q", later, notice)
	}
	if !strings.Contains(notice, `"remember the number 42, then wait for my…"`) {
		t.Errorf("cut-off notice %q does not name the message by its first words", notice)
	}

	n := len(w.model.Requests())
	again := gw.ask(t, "lane", "/retry")
	reqs := w.model.Requests()[n:]
	if requestsWith(reqs, cut) != 1 || requestsWith(reqs, "capital of France") != 0 {
		t.Errorf("/retry sent the model %d requests with the cut-off message and %d with the later one, want 1 and 0",
			requestsWith(reqs, cut), requestsWith(reqs, "capital of France"))
	}
	if again.Status != "completed" || !strings.Contains(again.Reply, "remember the number 42") {
		t.Errorf("/retry answered %+v, want the cut-off message run", again)
	}

	n = len(w.model.Requests())
	if twice := gw.ask(t, "lane", "/retry"); !strings.HasPrefix(twice.Reply, "Nothing to retry") {
		t.Errorf("second /retry answered %+v, want Nothing to retry", twice)
	}
	if got := len(w.model.Requests()); got != n {
		t.Errorf("the second /retry reached the model (%d requests, want %d)", got, n)
	}
}

// A lane with nothing cut off or timed out: /retry says so and the model
// gets no request, on a lane that never ran a turn and on one whose turns
// all finished.
func TestIntegrationRetryWithNothingToRetryRunsNothing(t *testing.T) {
	w := newWorld(t)
	gw := w.start(t, gateway.Config{})
	if r := gw.ask(t, "fresh", "/retry"); !strings.HasPrefix(r.Reply, "Nothing to retry") || len(w.model.Requests()) != 0 {
		t.Errorf("/retry on a fresh lane answered %+v with %d model requests, want Nothing to retry and none",
			r, len(w.model.Requests()))
	}
	if r := gw.ask(t, "done", "count to three"); r.Status != "completed" {
		t.Fatalf("answer %+v", r)
	}
	n := len(w.model.Requests())
	if r := gw.ask(t, "done", "/retry"); !strings.HasPrefix(r.Reply, "Nothing to retry") {
		t.Errorf("/retry after a finished turn answered %+v, want Nothing to retry", r)
	}
	if got := len(w.model.Requests()); got != n {
		t.Errorf("/retry reached the model (%d requests, want %d)", got, n)
	}
}

// A turn the watchdog stopped stays the turn to retry while other turns
// run: /retry after a later answer reruns the timed-out message.
func TestIntegrationRetryRerunsTheTimedOutMessageAfterALaterTurn(t *testing.T) {
	w := newWorld(t)
	w.turnTimeout = 2 * time.Second
	var hang atomic.Bool
	hang.Store(true)
	w.model.Respond(func(req codextest.Request) codextest.Reply {
		if hang.Load() && strings.Contains(req.LastUserText(), "slow job") {
			return codextest.Reply{HangBeforeHeaders: true}
		}
		return codextest.DefaultReply(req)
	})
	gw := w.start(t, gateway.Config{})
	if res := gw.ask(t, "alpha", "slow job"); res.Status != "timed_out" {
		t.Fatalf("status %q, want timed_out", res.Status)
	}
	hang.Store(false)
	if r := gw.ask(t, "alpha", "quick job"); r.Status != "completed" {
		t.Fatalf("later answer %+v", r)
	}
	n := len(w.model.Requests())
	again := gw.ask(t, "alpha", "/retry")
	reqs := w.model.Requests()[n:]
	if requestsWith(reqs, "slow job") != 1 || requestsWith(reqs, "quick job") != 0 || !strings.Contains(again.Reply, "slow job") {
		t.Errorf("/retry answered %+v after %d requests with the slow job and %d with the quick one, want the slow job once",
			again, requestsWith(reqs, "slow job"), requestsWith(reqs, "quick job"))
	}
}
