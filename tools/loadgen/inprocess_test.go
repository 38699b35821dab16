package loadgen

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/store"
)

// BenchmarkTelegramTurnInProcess runs the gateway, the store and the
// Telegram adapter in this process (codex is the real app-server) so that
// `-cpuprofile` shows where gatewayd's CPU goes per message; the fakes are
// in the profile too, under their own packages. One private chat, each
// message sent when the last was answered.
func BenchmarkTelegramTurnInProcess(b *testing.B) {
	ctx := context.Background()
	srv, w := telegramtest.New(b), gatewaytest.NewWorld(b)
	log := infoLogger()
	var db *store.Store
	w.Start(b, ctx, gateway.Config{Logger: log}, func(st *store.Store) []gateway.Platform {
		db = st
		tg, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, AllowedUsers: []int64{1001},
			Cursor: st, PollTimeout: 30 * time.Second, Logger: log})
		if err != nil {
			b.Fatalf("telegram.New: %v", err)
		}
		return []gateway.Platform{tg}
	})
	dm, alice := models.Chat{ID: 1001, Type: models.ChatTypePrivate}, models.User{ID: 1001, FirstName: "Alice"}
	// Commits (each an fsync), statements and Bot API calls per message do
	// not depend on how busy the machine is, unlike the time figures.
	botCalls := func() int {
		n := 0
		for _, m := range []string{"sendMessage", "editMessageText", "sendChatAction", "getUpdates"} {
			n += srv.Calls(m)
		}
		return n
	}
	commits, statements, calls := db.Commits(), db.Statements(), botCalls()
	b.ResetTimer()
	defer func() {
		b.ReportMetric(float64(db.Commits()-commits)/float64(b.N), "commits/msg")
		b.ReportMetric(float64(db.Statements()-statements)/float64(b.N), "statements/msg")
		b.ReportMetric(float64(botCalls()-calls)/float64(b.N), "botapi-calls/msg")
	}()
	for i := range b.N {
		text := fmt.Sprintf("m%d", i)
		srv.Text(dm, alice, 0, text, nil)
		srv.WaitFor(time.Minute, "reply "+text, func() bool {
			msgs := srv.Messages(dm.ID, 0)
			return len(msgs) > 0 && msgs[len(msgs)-1].Text == "ECHO: "+text
		})
	}
}

// infoLogger encodes like the daemon's default (info, JSON) into a sink
// that costs nothing.
func infoLogger() *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zapcore.InfoLevel))
}
