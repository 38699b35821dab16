package telegram_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/features"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

// TestEndToEndSenderLimit: past lanes.max_per_minute (2 here) Alice's
// messages are acknowledged (Telegram forgets them, so they are not
// redelivered) but not run; she is told once, replying to the first one
// refused; the two accepted run once each. Real codex, fake model, real
// SQLite, the real adapter.
func TestEndToEndSenderLimit(t *testing.T) {
	t.Parallel() // its own fake Bot API, store and codex home
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	world.Features = features.Settings{MaxPerMinute: 2}
	startStackWith(t, ctx, world, srv, gateway.Config{})
	var refused []int
	for i := 1; i <= 4; i++ {
		m := srv.Text(dm, alice, 0, fmt.Sprintf("message %d", i), nil)
		if i > 2 {
			refused = append(refused, m.ID)
		}
	}
	srv.WaitFor(60*time.Second, "two replies and the notice", func() bool {
		echoes, notices := limitCounts(srv.Messages(dm.ID, 0))
		return echoes == 2 && notices == 1
	})
	srv.WaitFor(10*time.Second, "every update confirmed", func() bool { return srv.Pending() == 0 })

	for _, m := range srv.Messages(dm.ID, 0) {
		if strings.Contains(m.Text, "lanes.max_per_minute") && m.ReplyTo != refused[0] {
			t.Errorf("the notice replies to %d, want the first refused message %d", m.ReplyTo, refused[0])
		}
	}
	asked := map[string]int{}
	for _, r := range world.Model.Requests() {
		asked[r.LastUserText()]++
	}
	if asked["message 1"] != 1 || asked["message 2"] != 1 || asked["message 3"]+asked["message 4"] != 0 {
		t.Errorf("model asked %v, want messages 1 and 2 once each, 3 and 4 never", asked)
	}
	if echoes, notices := limitCounts(srv.Messages(dm.ID, 0)); echoes != 2 || notices != 1 {
		t.Errorf("%d replies and %d notices, want 2 and 1", echoes, notices)
	}
}

// limitCounts is how many of msgs are the fake model's echoes and how many the
// sender limit's notices.
func limitCounts(msgs []telegramtest.Message) (echoes, notices int) {
	for _, m := range msgs {
		switch {
		case strings.Contains(m.Text, "ECHO: message"):
			echoes++
		case strings.Contains(m.Text, "lanes.max_per_minute"):
			notices++
		}
	}
	return echoes, notices
}
