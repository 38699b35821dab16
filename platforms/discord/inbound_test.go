package discord_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

// flakySink fails deliveries that fail says to fail, reports every attempt
// on attempts, and records the rest.
type flakySink struct {
	*recSink
	fail     func(in gateway.Inbound, attempt int) error
	attempts chan string
	counts   map[string]int // used by the adapter's single worker only
}

func newFlakySink(rec *recSink, fail func(in gateway.Inbound, attempt int) error) *flakySink {
	return &flakySink{recSink: rec, fail: fail, attempts: make(chan string, 256), counts: map[string]int{}}
}

func (s *flakySink) Deliver(ctx context.Context, in gateway.Inbound) (bool, error) {
	s.counts[in.Text]++
	s.attempts <- in.Text
	if err := s.fail(in, s.counts[in.Text]); err != nil {
		return false, err
	}
	return s.recSink.Deliver(ctx, in)
}

// waitAttempt waits for an attempt to deliver text.
func (s *flakySink) waitAttempt(t *testing.T, text string) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case got := <-s.attempts:
			if got == text {
				return
			}
		case <-deadline:
			t.Fatalf("no attempt to deliver %q", text)
		}
	}
}

// waitText waits for the delivery of text, skipping others.
func (s *recSink) waitText(t *testing.T, text string) gateway.Inbound {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case in := <-s.got:
			if in.Text == text {
				return in
			}
		case <-deadline:
			t.Fatalf("%q was never delivered (deliveries: %+v)", text, s.deliveries())
			return gateway.Inbound{}
		}
	}
}

// A Deliver that fails (a busy store) used to be logged and forgotten, and
// the next message of the channel moved the cursor past it, so not even the
// backfill after a restart found it. The worker retries it, and later
// messages wait their turn.
func TestFailedDeliveryIsRetriedInOrder(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	srv.AddThread("11", channel, "5")
	cfg := baseConfig(t, srv)
	cfg.RetryBackoff = 5 * time.Millisecond
	var sink *flakySink
	r := startWithSink(t, cfg, func(rec *recSink) gateway.Sink {
		sink = newFlakySink(rec, func(in gateway.Inbound, attempt int) error {
			if in.Text == "second" && attempt <= 2 {
				return errors.New("store busy")
			}
			return nil
		})
		return sink
	})
	srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "first", MentionBot: true})
	srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "second"})
	srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "third"})
	for _, want := range []string{"first", "second", "third"} {
		if in := r.sink.next(t); in.Text != want {
			t.Fatalf("delivered %q, want %q (in order)", in.Text, want)
		}
	}
	r.stop()
	if n := sink.counts["second"]; n != 3 {
		t.Fatalf("%d attempts to deliver the failing message, want 3", n)
	}
}

// A message that could not be delivered before the adapter stopped (the
// gateway is shutting down, or the store kept failing) keeps the channel's
// cursor before it, whatever comes after it in this process (other
// messages, the bot's own), so the backfill of the next start delivers it.
func TestUndeliveredMessageIsBackfilledAfterRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{name: "gateway shutting down", err: gateway.ErrShuttingDown},
		{name: "store failing until stop", err: errors.New("store busy")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, channel)
			srv.AddThread("11", channel, "5")
			cfg := baseConfig(t, srv)
			cfg.RetryBackoff = 5 * time.Millisecond
			var sink *flakySink
			first := startWithSink(t, cfg, func(rec *recSink) gateway.Sink {
				sink = newFlakySink(rec, func(in gateway.Inbound, _ int) error {
					if in.Text == "lost?" {
						return tc.err
					}
					return nil
				})
				return sink
			})
			srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "start", MentionBot: true})
			first.sink.next(t)
			lost := srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "lost?"})
			sink.waitAttempt(t, "lost?")
			srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "after"})
			thread := gateway.Address{Platform: "discord", Kind: gateway.LaneThread, ChatID: channel, TopicID: "11"}
			if _, err := first.a.Send(context.Background(), gateway.Outbound{Address: thread, Text: "bot says"}); err != nil {
				t.Fatal(err)
			}
			if tc.err == gateway.ErrShuttingDown {
				// Not blocked: the rest is handled (the bot's own message
				// too: the sentinel comes after it), but no cursor moves.
				first.sink.waitText(t, "after")
				sentinel(t, srv, first)
			}
			first.stop()

			second := start(t, cfg) // ready after backfill
			got := second.sink.deliveries()
			if len(got) == 0 || got[0].MessageID != lost || got[0].Text != "lost?" {
				t.Fatalf("backfill after restart delivered %+v, want %q (%s) first", got, "lost?", lost)
			}
			second.sink.waitText(t, "after")
		})
	}
}
