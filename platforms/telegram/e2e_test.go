package telegram_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/store"
)

// startStack runs gatewayd (real store and codex) with a Telegram adapter
// talking to the fake Bot API.
func startStack(t *testing.T, ctx context.Context, w *gatewaytest.World, srv *telegramtest.Server) *gatewaytest.Stack {
	t.Helper()
	return startStackWith(t, ctx, w, srv, gateway.Config{})
}

// startStackWith is startStack with a gateway configuration of the test's.
func startStackWith(t *testing.T, ctx context.Context, w *gatewaytest.World, srv *telegramtest.Server, cfg gateway.Config) *gatewaytest.Stack {
	t.Helper()
	return w.Start(t, ctx, cfg, func(st *store.Store) []gateway.Platform {
		tg, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, AllowedUsers: []int64{1001, 1002},
			Cursor: st, PollTimeout: time.Second, RetryBackoff: 20 * time.Millisecond, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatalf("telegram.New: %v", err)
		}
		return []gateway.Platform{tg}
	})
}

// aliceDM is the private chat of the allowed user the end-to-end tests
// talk as, known to srv.
func aliceDM(srv *telegramtest.Server) (models.Chat, models.User) {
	dm := models.Chat{ID: 1001, Type: models.ChatTypePrivate}
	srv.Chat(dm)
	return dm, models.User{ID: 1001, FirstName: "Alice"}
}

// worldFiles is a files store under the world's state directory.
func worldFiles(w *gatewaytest.World) *files.Store {
	return files.New(filepath.Join(w.Work, "state", "files"), files.Limits{}, nil)
}

// TestEndToEndTopicsKeepTheirContextAcrossRestart: two forum topics talk to
// the real codex (fake model); the daemon restarts between messages; each
// topic's second turn still carries its own first message and not the other's.
func TestEndToEndTopicsKeepTheirContextAcrossRestart(t *testing.T) {
	t.Parallel() // its own fake Bot API, store and codex home
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	forum := models.Chat{ID: -1001, Type: models.ChatTypeSupergroup, IsForum: true}
	alice := models.User{ID: 1001, FirstName: "Alice"}
	say := func(topic int, text string) *models.Message {
		return srv.Text(forum, alice, topic, "@gatewayd_test_bot "+text, nil)
	}
	waitReply := func(topic int, want string) {
		t.Helper()
		srv.WaitFor(60*time.Second, "reply "+want, func() bool {
			for _, m := range srv.Messages(forum.ID, topic) {
				if strings.Contains(m.Text, want) {
					return true
				}
			}
			return false
		})
	}

	d := startStack(t, ctx, world, srv)
	first := say(42, "remember APPLE")
	say(43, "remember PEAR")
	waitReply(42, "ECHO")
	waitReply(43, "ECHO")
	// Stopping right after the replies arrived is on purpose: a reply the
	// platform has but the outbox has not yet marked sent must not be sent
	// again after the restart (counted below).
	d.Stop(t)

	startStack(t, ctx, world, srv)
	// Telegram redelivers the first message (same message id): the gateway
	// must recognise it and not answer it twice.
	srv.Queue(&models.Update{Message: first})
	say(42, "which fruit, topic 42?")
	say(43, "which fruit, topic 43?")
	waitReply(42, "topic 42?")
	waitReply(43, "topic 43?")

	tests := []struct {
		name, marker, own, other string
	}{
		{name: "topic 42", marker: "topic 42?", own: "APPLE", other: "PEAR"},
		{name: "topic 43", marker: "topic 43?", own: "PEAR", other: "APPLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, ok := world.Model.LastRequestWith(tt.marker)
			if !ok {
				t.Fatalf("no model request for %q", tt.marker)
			}
			input := req.InputText()
			if !strings.Contains(input, tt.own) || strings.Contains(input, tt.other) {
				t.Fatalf("context of %s after restart: own %q present=%v, other %q present=%v",
					tt.name, tt.own, strings.Contains(input, tt.own), tt.other, strings.Contains(input, tt.other))
			}
		})
	}
	apples := 0
	for _, m := range srv.Messages(forum.ID, 42) {
		if strings.Contains(m.Text, "APPLE") {
			apples++
		}
	}
	if apples != 1 {
		t.Fatalf("the redelivered message was answered %d times, want once: %+v", apples, srv.Messages(forum.ID, 42))
	}
	for _, topic := range []int{42, 43} {
		for _, m := range srv.Messages(forum.ID, topic) {
			if strings.Contains(m.Text, "topic 42?") && topic != 42 || strings.Contains(m.Text, "topic 43?") && topic != 43 {
				t.Fatalf("reply %q landed in topic %d", m.Text, topic)
			}
		}
	}
}
