package slack_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/slack"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
	"github.com/gatewayd/gatewayd/store"
)

// countSink commits nothing: what the adapter itself costs per event.
type countSink struct{ n chan struct{} }

func (s countSink) Deliver(context.Context, gateway.Inbound) (bool, error) {
	s.n <- struct{}{}
	return false, nil
}

// benchAdapter runs an adapter with a quiet logger against fake.
func benchAdapter(b *testing.B, fake *slacktest.Server, sink gateway.Sink) *slack.Adapter {
	b.Helper()
	a, err := slack.New(slack.Config{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.APIURL(),
		AllowedUsers: []string{allowed}, Logger: zap.NewNop(), Cursor: newMemCursor()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	b.Cleanup(func() { cancel(); <-done })
	select {
	case <-a.Ready():
	case err := <-done:
		b.Fatalf("Run: %v", err)
	case <-time.After(waitFor):
		b.Fatal("not ready")
	}
	return a
}

// BenchmarkSlackIntake: b.N message events over 16 DMs, from the fake's
// socket to Deliver and back as acks; events/s is what one adapter takes.
func BenchmarkSlackIntake(b *testing.B) {
	fake := slacktest.New(slacktest.Options{AckTimeout: time.Minute})
	defer fake.Close()
	fake.AddUser(slacktest.User{ID: allowed, Name: "ann"})
	sink := countSink{n: make(chan struct{}, b.N+1)}
	benchAdapter(b, fake, sink)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		fake.Post(slacktest.Post{Channel: "D" + strconv.Itoa(i%16), User: allowed, Text: "event " + strconv.Itoa(i)})
	}
	for range b.N {
		<-sink.n
	}
	if !fake.WaitFor(time.Minute, func() bool { return fake.Unacked() == 0 }) {
		b.Fatalf("%d unacked", fake.Unacked())
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkSlackSendReply: one reply posted (render,
// limiter, chat.postMessage against the fake): the outbound share of a
// message's round trip.
func BenchmarkSlackSendReply(b *testing.B) {
	fake := slacktest.New(slacktest.Options{})
	defer fake.Close()
	a := benchAdapter(b, fake, countSink{n: make(chan struct{}, 16)})
	b.ResetTimer()
	for i := range b.N {
		// A DM each: Slack's pace of one post a second per channel is not
		// what this measures.
		addr := gateway.Address{Platform: slack.PlatformName, Kind: gateway.LaneDM, ChatID: "D" + strconv.Itoa(i)}
		_, err := a.Send(context.Background(), gateway.Outbound{ID: int64(i + 1), Address: addr, Kind: gateway.OutReply,
			Text: "**answer** with `code` and a [link](https://example.com)"})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSlackMessageToReply: a DM to the real codex app-server (fake
// model) and back through the gateway (store, inbox, outbox) and the
// adapter: the whole round trip on a Slack lane, one message at a time.
func BenchmarkSlackMessageToReply(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := slacktest.New(slacktest.Options{})
	defer fake.Close()
	fake.AddUser(slacktest.User{ID: allowed, Name: "ann"})
	world := gatewaytest.NewWorld(b)
	stack := world.Start(b, ctx, gateway.Config{}, func(st *store.Store) []gateway.Platform {
		return []gateway.Platform{newAdapter(b, fake, st)}
	})
	defer stack.Stop(b)
	b.ResetTimer()
	for i := range b.N {
		want := fmt.Sprintf("round trip %d", i)
		fake.Post(slacktest.Post{Channel: dm, User: allowed, Text: want})
		if !fake.WaitFor(time.Minute, func() bool { return dmFinal(fake, want) }) {
			b.Fatalf("no reply to %q", want)
		}
	}
}

// dmFinal reports the final reply to want in the DM.
func dmFinal(fake *slacktest.Server, want string) bool {
	for _, m := range fake.Sent(dm) {
		if (m.Metadata != nil || m.Edits > 0) && contains(slacktest.Markdown(m), want) {
			return true
		}
	}
	return false
}
