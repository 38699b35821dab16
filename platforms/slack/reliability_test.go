package slack_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/slack"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
)

func TestRedeliveredEventDeliveredOnceAndAcked(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	fake.IgnoreAcks(1) // the first ack is lost: Slack redelivers
	ts, eventID := fake.PostEvent(slacktest.Post{Channel: dm, User: allowed, Text: "once"})
	first := h.sink.next(t)
	if first.MessageID != dm+":"+ts {
		t.Fatalf("delivery %+v", first)
	}
	// The redelivery is acked too (this time the ack counts) and answered
	// once: the adapter knows it handled it, and the inbox would.
	if !fake.WaitFor(waitFor, func() bool { return fake.Unacked() == 0 && knownAcks(fake) == 2 }) {
		t.Fatalf("unacked %d, acks %+v", fake.Unacked(), fake.Acks())
	}
	fake.Redeliver(eventID) // after the ack too
	if !fake.WaitFor(waitFor, func() bool { return fake.Unacked() == 0 && knownAcks(fake) == 3 }) {
		t.Fatalf("unacked %d, acks %+v", fake.Unacked(), fake.Acks())
	}
	if h.sink.unique() != 1 {
		t.Fatalf("unique %d", h.sink.unique())
	}
}

// An envelope Slack sends again after a later message of its lane was
// delivered (lost the first time, or out of order) still reaches the
// gateway: the lane's cursor only says where backfill starts.
func TestRedeliveryAfterLaterMessageReachesGateway(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	ts, eventID := fake.PostEvent(slacktest.Post{Channel: dm, User: allowed, Text: "earlier"})
	h.sink.next(t)
	fake.Post(slacktest.Post{Channel: dm, User: allowed, Text: "later"})
	h.sink.next(t)
	fake.Redeliver(eventID)
	if again := h.sink.next(t); again.MessageID != dm+":"+ts {
		t.Fatalf("redelivery gave %+v", again)
	}
	h.sink.none(t, fake)
}

func TestAckWaitsForCommit(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	hold := make(chan struct{})
	h.sink.mu.Lock()
	h.sink.hold = hold
	h.sink.mu.Unlock()
	acksBefore := len(fake.Acks())
	fake.Post(slacktest.Post{Channel: dm, User: allowed, Text: "slow commit"})
	if !fake.WaitFor(waitFor, func() bool { return fake.Unacked() == 1 }) {
		t.Fatal("not sent")
	}
	if n := len(fake.Acks()); n != acksBefore {
		t.Fatalf("acked before the commit: %d acks", n)
	}
	close(hold)
	h.sink.next(t)
	if !fake.WaitFor(waitFor, func() bool { return fake.Unacked() == 0 }) {
		t.Fatal("not acked after the commit")
	}
}

func TestStoppedBeforeCommitLeavesEventUnacked(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	h.sink.mu.Lock()
	h.sink.hold = make(chan struct{}) // never committed
	h.sink.mu.Unlock()
	fake.Post(slacktest.Post{Channel: dm, User: allowed, Text: "lost?"})
	if !fake.WaitFor(waitFor, func() bool { return fake.Unacked() == 1 }) {
		t.Fatal("not sent")
	}
	h.stop()
	for _, a := range fake.Acks() {
		if a.Known && !a.Ignored {
			t.Fatalf("an envelope was acked without a commit: %+v", a)
		}
	}
	// The next process gets it again.
	h2 := start(t, fake, h.cursor)
	if in := h2.sink.next(t); in.Text != "lost?" {
		t.Fatalf("redelivered %+v", in)
	}
}

func TestMissedThreadMessagesBackfilledAfterRestart(t *testing.T) {
	fake := newFake(t)
	cursor := newMemCursor()
	h := start(t, fake, cursor)
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "start", MentionBot: true})
	h.sink.next(t)
	fake.Post(slacktest.Post{Channel: dm, User: allowed, Text: "dm start"})
	h.sink.next(t)
	if !fake.WaitFor(waitFor, func() bool { return fake.Unacked() == 0 }) { // else redelivered, rightly
		t.Fatal("the first messages were never acked")
	}
	h.stop()
	if !fake.WaitFor(waitFor, func() bool { return !fake.Connected() }) {
		t.Fatal("socket still open")
	}
	fake.DropWhileDisconnected(true) // Slack gave up on these
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "missed 1", ThreadTS: root})
	fake.Post(slacktest.Post{Channel: channel, User: allowed2, Text: "missed 2", ThreadTS: root})
	fake.Post(slacktest.Post{Channel: dm, User: allowed, Text: "missed dm"})
	if fake.DroppedEvents() != 3 {
		t.Fatalf("dropped %d", fake.DroppedEvents())
	}
	h2 := start(t, fake, cursor) // Ready after the backfill
	got := map[string]bool{}
	for _, in := range h2.sink.deliveries() {
		got[in.Text] = true
	}
	for _, want := range []string{"missed 1", "missed 2", "missed dm"} {
		if !got[want] {
			t.Fatalf("backfill missed %q: %v", want, got)
		}
	}
	if got["start"] || got["dm start"] || len(h2.sink.deliveries()) != 3 {
		t.Fatalf("backfill delivered again what was handled: %v", got)
	}
}

func TestDroppedSocketLosesNothing(t *testing.T) {
	for _, fault := range []string{"drop", "disconnect", "no pings"} {
		t.Run(fault, func(t *testing.T) {
			fake := newFake(t)
			h := start(t, fake, newMemCursor())
			root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "root", MentionBot: true})
			h.sink.next(t)
			opens := fake.Opens()
			switch fault {
			case "drop":
				fake.DropConnection()
			case "disconnect":
				fake.Disconnect("refresh_requested")
			case "no pings":
				fake.StopPings()
			}
			const n = 10
			for i := range n {
				fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "m" + string(rune('a'+i)), ThreadTS: root})
			}
			if !fake.WaitFor(waitFor, func() bool { return fake.Opens() > opens && fake.Connected() }) {
				t.Fatal("no reconnect")
			}
			// What was written to the dead socket is redelivered; what
			// waited for the new one is sent on it.
			if !h.sink.waitUntil(fake, func() bool { return h.sink.unique() == n+1 && fake.Unacked() == 0 }) {
				t.Fatalf("delivered %d of %d (dropped %d)", h.sink.unique(), n+1, fake.DroppedEvents())
			}
		})
	}
}

// TestMessagesMissedWhileAwayAreBackfilled: Slack gave up on the events
// sent while the app was away; the reconnect reads the thread back.
func TestMessagesMissedWhileAwayAreBackfilled(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "root", MentionBot: true})
	h.sink.next(t)
	if !fake.WaitFor(waitFor, func() bool { return fake.Unacked() == 0 }) {
		t.Fatal("root not acked")
	}
	fake.RefuseConnections(true)
	fake.DropWhileDisconnected(true)
	fake.DropConnection()
	if !fake.WaitFor(waitFor, func() bool { return !fake.Connected() }) {
		t.Fatal("still connected")
	}
	const n = 5
	for i := range n {
		fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "away " + string(rune('a'+i)), ThreadTS: root})
	}
	if fake.DroppedEvents() != n {
		t.Fatalf("dropped %d", fake.DroppedEvents())
	}
	fake.RefuseConnections(false)
	if !h.sink.waitUntil(fake, func() bool { return h.sink.unique() == n+1 }) {
		t.Fatalf("delivered %d of %d", h.sink.unique(), n+1)
	}
	all := h.sink.deliveries()
	for i, in := range all[1:] {
		if want := "away " + string(rune('a'+i)); in.Text != want {
			t.Fatalf("backfilled out of order: %d is %q, want %q", i, in.Text, want)
		}
	}
}

func knownAcks(fake *slacktest.Server) int {
	n := 0
	for _, a := range fake.Acks() {
		if a.Known {
			n++
		}
	}
	return n
}

func TestBadTokensAreConfigErrors(t *testing.T) {
	fake := newFake(t)
	for _, tt := range []struct {
		name, bot, app, key string
	}{
		{"bot token refused", "xoxb-wrong", slacktest.AppToken, "slack.bot_token"},
		{"bot token as app token", slacktest.BotToken, "xapp-wrong", "slack.app_token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config(fake, newMemCursor(), t)
			cfg.BotToken, cfg.AppToken = tt.bot, tt.app
			a, err := slack.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			err = a.Run(ctx, newRecSink())
			if !errors.Is(err, gateway.ErrConfig) || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("Run = %v, want ErrConfig naming %s", err, tt.key)
			}
			if strings.Contains(err.Error(), "wrong") {
				t.Fatalf("error shows the token: %v", err)
			}
		})
	}
}

func TestRateLimitedPostIsRetryAfter(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "hi", MentionBot: true})
	h.sink.next(t)
	fake.Inject429("chat.postMessage", 1, 1)
	_, err := h.a.Send(t.Context(), gateway.Outbound{ID: 1, Address: lane(root), Kind: gateway.OutReply, Text: "x"})
	var ra *gateway.RetryAfterError
	if !errors.As(err, &ra) || ra.After < time.Second {
		t.Fatalf("Send = %v, want a RetryAfterError of 1s", err)
	}
	// The method is paused: a send with a short deadline is told to wait
	// instead of hitting Slack again.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := h.a.Send(ctx, gateway.Outbound{ID: 2, Address: lane(root), Kind: gateway.OutReply, Text: "y"}); !errors.As(err, &ra) {
		t.Fatalf("Send during the pause = %v", err)
	}
	if fake.Calls("chat.postMessage") != 0 {
		t.Fatalf("%d posts during the pause", fake.Calls("chat.postMessage"))
	}
	// Later it goes through, once.
	id, err := h.a.Send(t.Context(), gateway.Outbound{ID: 1, Address: lane(root), Kind: gateway.OutReply, Text: "x"})
	if err != nil || len(fake.Sent(channel)) != 1 || fake.Sent(channel)[0].TS != id {
		t.Fatalf("Send after the pause = %q %v; sent %d", id, err, len(fake.Sent(channel)))
	}
}

func TestInboundSurvives429s(t *testing.T) {
	fake := newFake(t)
	fake.Inject429("users.info", 1, 2)
	fake.Inject429("apps.connections.open", 0, 1)
	h := start(t, fake, newMemCursor())
	fake.Post(slacktest.Post{Channel: dm, User: allowed, Text: "hi"})
	if in := h.sink.next(t); in.Text != "hi" {
		t.Fatalf("in = %+v", in)
	}
	fake.Inject429("conversations.replies", 1, 1)
	fake.DropWhileDisconnected(true)
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "root", MentionBot: true})
	h.sink.next(t)
	// The root is acked after Deliver returns; stopping before the ack
	// would (rightly) get it redelivered first on the next connection.
	if !fake.WaitFor(waitFor, func() bool { return fake.Unacked() == 0 }) {
		t.Fatal("the root was never acked")
	}
	h.stop()
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "while away", ThreadTS: root})
	h2 := start(t, fake, h.cursor)
	if in := h2.sink.next(t); in.Text != "while away" || fake.RateLimited("conversations.replies") != 1 {
		t.Fatalf("in = %+v, 429s %d", in, fake.RateLimited("conversations.replies"))
	}
}

// Presses and slash commands are acked at once, even while the message
// worker is held by a message waiting for its commit: Slack wants their
// ack within 3 s and never sends them again.
func TestPressAndSlashAckedWhileMessageWorkerBlocked(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := threadWithBot(t, h)
	buttons := []gateway.Button{{ID: "approve:1", Label: "Approve"}}
	id, err := h.a.SendButtons(t.Context(), gateway.Outbound{ID: 2, Address: lane(root), Kind: gateway.OutNotice, Text: "Run?"}, buttons)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	h.sink.mu.Lock()
	h.sink.hold = hold
	h.sink.mu.Unlock()
	fake.Post(slacktest.Post{Channel: dm, User: allowed, Text: "slow commit"})
	if !fake.WaitFor(waitFor, func() bool { return fake.Unacked() == 1 }) {
		t.Fatal("message not sent")
	}
	acks := knownAcks(fake)
	if _, err := fake.PressButton(channel, id, "approve:1", allowed); err != nil {
		t.Fatal(err)
	}
	fake.SlashCommand(channel, allowed, "/codex", "fork later")
	if !fake.WaitFor(waitFor, func() bool { return knownAcks(fake) == acks+2 }) {
		t.Fatalf("press and command not acked while the worker is held: %d acks", knownAcks(fake)-acks)
	}
	if fake.Unacked() != 1 {
		t.Fatalf("unacked %d, want the held message only", fake.Unacked())
	}
	close(hold)
	got := map[string]bool{}
	for range 2 {
		in := h.sink.next(t)
		got[in.Callback+in.Text] = true
	}
	if !got["approve:1"] || !got["slow commit"] {
		t.Fatalf("deliveries %v", got)
	}
}

// A live message is delivered while backfill still waits for a lane's
// history: the worker delivers what backfill read, a lane at a time, and
// never waits for Slack's history calls itself.
func TestLiveEventNotBehindBackfill(t *testing.T) {
	fake := newFake(t)
	cursor := newMemCursor()
	h := start(t, fake, cursor)
	const dm2, dm3 = "D2", "D3"
	for _, ch := range []string{dm, dm2} {
		fake.Post(slacktest.Post{Channel: ch, User: allowed, Text: "start " + ch})
		h.sink.next(t)
	}
	h.stop()
	if !fake.WaitFor(waitFor, func() bool { return !fake.Connected() }) {
		t.Fatal("socket still open")
	}
	fake.DropWhileDisconnected(true)
	fake.Post(slacktest.Post{Channel: dm, User: allowed, Text: "missed " + dm})
	fake.Post(slacktest.Post{Channel: dm2, User: allowed, Text: "missed " + dm2})
	fake.DropWhileDisconnected(false)
	held := []*slacktest.Held{
		fake.HoldMatching("conversations.history", "channel="+dm),
		fake.HoldMatching("conversations.history", "channel="+dm2),
	}
	a, err := slack.New(config(fake, cursor, t))
	if err != nil {
		t.Fatal(err)
	}
	sink := newRecSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	defer func() {
		for _, hd := range held {
			hd.Release()
		}
		cancel()
		<-done
	}()
	select {
	case <-held[0].Arrived():
	case <-held[1].Arrived():
	case <-time.After(waitFor):
		t.Fatal("backfill did not read history")
	}
	fake.Post(slacktest.Post{Channel: dm3, User: allowed, Text: "live"})
	if in := sink.next(t); in.Text != "live" {
		t.Fatalf("first delivery %+v, want the live message", in)
	}
	for _, hd := range held {
		hd.Release()
	}
	select {
	case <-a.Ready():
	case <-time.After(waitFor):
		t.Fatal("not ready after the backfill")
	}
	got := map[string]bool{}
	for _, in := range sink.deliveries() {
		got[in.Text] = true
	}
	if !got["missed "+dm] || !got["missed "+dm2] {
		t.Fatalf("backfill delivered %v", got)
	}
}

// Presses past a full interaction queue are answered "busy", not dropped
// in silence: Slack never sends them again.
func TestPressPastFullQueueAnsweredBusy(t *testing.T) {
	fake := newFake(t)
	h := start(t, fake, newMemCursor())
	root := threadWithBot(t, h)
	buttons := []gateway.Button{{ID: "approve:1", Label: "Approve"}}
	id, err := h.a.SendButtons(t.Context(), gateway.Outbound{ID: 2, Address: lane(root), Kind: gateway.OutNotice, Text: "Run?"}, buttons)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	h.sink.mu.Lock()
	h.sink.hold = hold // the first press holds the interaction worker
	h.sink.mu.Unlock()
	defer close(hold)
	busy := func() bool {
		for _, e := range fake.Ephemerals() {
			if strings.Contains(e.Text, "busy") && e.User == allowed {
				return true
			}
		}
		return false
	}
	for i := 0; i < 200 && !busy(); i++ {
		if _, err := fake.PressButton(channel, id, "approve:1", allowed); err != nil {
			t.Fatal(err)
		}
	}
	if !fake.WaitFor(waitFor, busy) {
		t.Fatalf("no busy answer: %+v", fake.Ephemerals())
	}
}
