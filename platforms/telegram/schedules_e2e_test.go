package telegram_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

// TestEndToEndAtFiresItsPrompt: /at 2s runs its prompt through the real
// app-server as a turn of the chat, whose reply says what started it;
// /schedules then has nothing left.
func TestEndToEndAtFiresItsPrompt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	startStackWith(t, ctx, world, srv, gateway.Config{})
	srv.Text(dm, alice, 0, "/at 2s water the plants", nil)
	srv.WaitFor(30*time.Second, "the /at answer", func() bool { return countContaining(srv.Messages(dm.ID, 0), "⏰ Scheduled s1, at ") == 1 })
	srv.WaitFor(60*time.Second, "the firing's reply", func() bool {
		for _, m := range srv.Messages(dm.ID, 0) {
			if strings.HasPrefix(m.Text, "⏰ at ") && strings.HasSuffix(m.Text, ": ECHO: water the plants") {
				return true
			}
		}
		return false
	})
	srv.Text(dm, alice, 0, "/schedules", nil)
	srv.WaitFor(30*time.Second, "/schedules", func() bool { return countContaining(srv.Messages(dm.ID, 0), "No schedules here") == 1 })
}
