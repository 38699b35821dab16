package telegram_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// Environment of TestPartsCrashChild: the fake Bot API and the directories
// that outlive the child (database, CODEX_HOME, working directory).
const (
	partsChildAPI  = "GATEWAYD_TG_PARTS_API"
	partsChildHome = "GATEWAYD_TG_PARTS_HOME"
	partsChildWork = "GATEWAYD_TG_PARTS_WORK"
)

const (
	replyParts   = 6
	askSixParts  = "please answer in six parts"
	partFillerCh = 3500 // UTF-16 units of filler per part: two parts never fit one message
)

// partMarker opens part i of the long reply; the fake holds a part by it.
func partMarker(i int) string { return gatewaytest.PartMarker(i, replyParts) }

// sixPartReply is a reply that Telegram's 4096-unit limit splits into exactly
// replyParts messages, one paragraph each.
func sixPartReply() string { return gatewaytest.PartedReply(replyParts, partFillerCh) }

// TestPartsCrashChild is the child process of
// TestKillNineBetweenPartsSendsEachPartOnce: gatewayd with the real store,
// the real codex app-server (fake model) and the Telegram adapter, against
// the parent's fake Bot API. It runs until it is killed.
func TestPartsCrashChild(t *testing.T) {
	api := os.Getenv(partsChildAPI)
	if api == "" {
		t.Skip("helper process for TestKillNineBetweenPartsSendsEachPartOnce")
	}
	work := os.Getenv(partsChildWork)
	world := &gatewaytest.World{Model: codextest.NewModel(t), Home: os.Getenv(partsChildHome),
		DB: filepath.Join(work, "gatewayd.db"), Work: work}
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), askSixParts) {
			return codextest.Reply{Text: sixPartReply()}
		}
		return codextest.DefaultReply(req)
	})
	world.Start(t, context.Background(), gateway.Config{}, childTelegram(t, api))
	fmt.Println("READY")
	select {} // killed here
}

// A kill -9 between two parts of a six-part reply: the next process sends
// the remaining parts, each part reaches Telegram exactly once, in order.
// The parent holds part k+1 at the fake Bot API, which proves part k was
// accepted and (the adapter records a part before sending the next)
// recorded; it kills the child there, and the held request never reaches
// Telegram.
func TestKillNineBetweenPartsSendsEachPartOnce(t *testing.T) {
	processtest.SkipWhenShort(t, "kills a child gateway with SIGKILL")
	t.Parallel() // its own fake Bot API, store and codex home
	for _, killBefore := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("killed before part %d", killBefore), func(t *testing.T) {
			t.Parallel() // each case has its own fake Bot API and directories
			srv := telegramtest.New(t)
			home, work := t.TempDir(), t.TempDir()
			env := []string{partsChildAPI + "=" + srv.URL, partsChildHome + "=" + home, partsChildWork + "=" + work}
			dm := models.Chat{ID: 1001, Type: models.ChatTypePrivate}
			alice := models.User{ID: 1001, FirstName: "Alice"}

			held := srv.HoldText("sendMessage", partMarker(killBefore))
			first := gatewaytest.StartChild(t, "TestPartsCrashChild", env...)
			first.Expect(t, "READY")
			srv.Text(dm, alice, 0, askSixParts, nil)
			select {
			case <-held.Arrived():
			case <-time.After(90 * time.Second):
				t.Fatalf("part %d never reached the fake Bot API", killBefore)
			}
			first.Kill()
			held.Drop()

			second := gatewaytest.StartChild(t, "TestPartsCrashChild", env...)
			second.Expect(t, "READY")
			srv.WaitFor(60*time.Second, "the last part", func() bool {
				return len(partsSeen(srv.Messages(dm.ID, 0), replyParts-1)) > 0
			})
			second.Kill()
			assertEachPartOnce(t, srv.Messages(dm.ID, 0))
		})
	}
}

// partsSeen returns the indexes of the messages that show part i.
func partsSeen(msgs []telegramtest.Message, i int) []int {
	var at []int
	for n, m := range msgs {
		if strings.Contains(m.Text, partMarker(i)) {
			at = append(at, n)
		}
	}
	return at
}

func assertEachPartOnce(t *testing.T, msgs []telegramtest.Message) {
	t.Helper()
	last := -1
	for i := range replyParts {
		at := partsSeen(msgs, i)
		if len(at) != 1 {
			t.Fatalf("part %d is shown by %d messages, want exactly 1", i, len(at))
		}
		if at[0] <= last {
			t.Fatalf("part %d (message %d) is shown before part %d (message %d)", i, at[0], i-1, last)
		}
		last = at[0]
	}
}

// childTelegram is the Telegram adapter a crash-test child runs against the
// parent's fake Bot API at api. A failure is printed for the parent, which
// waits for READY, and the child then waits to be killed.
func childTelegram(t *testing.T, api string) func(st *store.Store) []gateway.Platform {
	return func(st *store.Store) []gateway.Platform {
		tg, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: api, AllowedUsers: []int64{1001},
			Cursor: st, PollTimeout: time.Second, RetryBackoff: 20 * time.Millisecond, Logger: zaptest.NewLogger(t)})
		if err != nil {
			fmt.Println("ERROR telegram.New:", err)
			select {}
		}
		return []gateway.Platform{tg}
	}
}
