package telegram_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// daemon is one gatewayd "process": store + real codex + gateway + adapter.
type daemon struct {
	st   *store.Store
	cx   *codex.Client
	stop context.CancelFunc
	done chan error
}

type e2eEnv struct {
	srv   *telegramtest.Server
	model *codextest.Model
	home  string
	db    string
	work  string
}

func (e *e2eEnv) start(t *testing.T, ctx context.Context) *daemon {
	t.Helper()
	log := zaptest.NewLogger(t)
	st, err := store.Open(ctx, e.db, store.Options{Logger: log})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	cx, err := codex.Start(ctx, codex.Options{
		Command:      codextest.CodexBinary(t),
		Args:         codextest.Args(e.model.URL),
		Home:         e.home,
		Env:          codextest.Env(),
		Dir:          e.work,
		StartTimeout: 20 * time.Second,
		Logger:       log,
	})
	if err != nil {
		_ = st.Close()
		t.Fatalf("codex.Start: %v", err)
	}
	tg, err := telegram.New(telegram.Config{
		Token:        telegramtest.Token,
		APIURL:       e.srv.URL,
		AllowedUsers: []int64{1001},
		Cursor:       st,
		PollTimeout:  time.Second,
		RetryBackoff: 20 * time.Millisecond,
		Logger:       log,
	})
	if err != nil {
		t.Fatalf("telegram.New: %v", err)
	}
	g, err := gateway.New(gateway.Config{
		Thread:       codex.ThreadConfig{Cwd: e.work},
		DrainTimeout: 20 * time.Second,
		Logger:       log,
	}, st, cx)
	if err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	g.AddPlatform(tg)
	runCtx, cancel := context.WithCancel(ctx)
	d := &daemon{st: st, cx: cx, stop: cancel, done: make(chan error, 1)}
	go func() { d.done <- g.Run(runCtx) }()
	select {
	case <-g.Ready():
	case err := <-d.done:
		t.Fatalf("gateway stopped before ready: %v", err)
	case <-ctx.Done():
		t.Fatal("gateway not ready")
	}
	return d
}

// waitOutboxSent waits until the gateway marked every reply sent. A reply
// seen by Telegram is not yet marked; shutting down in between makes the
// outbox send it again after the restart (at-least-once). There is no
// signal for "marked", so this polls with a deadline.
func (d *daemon) waitOutboxSent(t *testing.T, ctx context.Context) {
	t.Helper()
	for {
		due, err := d.st.DueOutbox(ctx, time.Now().Add(time.Hour), 10)
		if err != nil {
			t.Fatalf("DueOutbox: %v", err)
		}
		if len(due) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("outbox still holds %d messages", len(due))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (d *daemon) shutdown(t *testing.T) {
	t.Helper()
	d.stop()
	if err := <-d.done; err != nil {
		t.Errorf("gateway.Run: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.cx.Close(ctx); err != nil && !errors.Is(err, codex.ErrClosed) {
		t.Errorf("codex close: %v", err)
	}
	if err := d.st.Close(); err != nil {
		t.Errorf("store close: %v", err)
	}
}

// TestEndToEndTopicsKeepTheirContextAcrossRestart: two forum topics talk to
// the real codex (fake model); the daemon restarts between messages; each
// topic's second turn still carries its own first message and not the other's.
func TestEndToEndTopicsKeepTheirContextAcrossRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	env := &e2eEnv{
		srv: telegramtest.New(t), model: codextest.NewModel(t), home: codextest.Home(t),
		db: filepath.Join(dir, "gatewayd.db"), work: dir,
	}
	forum := models.Chat{ID: -1001, Type: models.ChatTypeSupergroup, IsForum: true}
	alice := models.User{ID: 1001, FirstName: "Alice"}
	say := func(topic int, text string) *models.Message {
		return env.srv.Text(forum, alice, topic, "@gatewayd_test_bot "+text, nil)
	}
	waitReply := func(topic int, want string) {
		t.Helper()
		env.srv.WaitFor(60*time.Second, "reply "+want, func() bool {
			for _, m := range env.srv.Messages(forum.ID, topic) {
				if strings.Contains(m.Text, want) {
					return true
				}
			}
			return false
		})
	}

	d := env.start(t, ctx)
	first := say(42, "remember APPLE")
	say(43, "remember PEAR")
	waitReply(42, "ECHO")
	waitReply(43, "ECHO")
	d.waitOutboxSent(t, ctx)
	d.shutdown(t)

	d = env.start(t, ctx)
	defer d.shutdown(t)
	// Telegram redelivers the first message (same message id): the gateway
	// must recognise it and not answer it twice.
	env.srv.Queue(&models.Update{Message: first})
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
			var req *codextest.Request
			for _, r := range env.model.Requests() {
				if strings.Contains(r.LastUserText(), tt.marker) {
					req = &r
				}
			}
			if req == nil {
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
	for _, m := range env.srv.Messages(forum.ID, 42) {
		if strings.Contains(m.Text, "APPLE") {
			apples++
		}
	}
	if apples != 1 {
		t.Fatalf("the redelivered message was answered %d times, want once: %+v", apples, env.srv.Messages(forum.ID, 42))
	}
	for _, topic := range []int{42, 43} {
		for _, m := range env.srv.Messages(forum.ID, topic) {
			if strings.Contains(m.Text, "topic 42?") && topic != 42 || strings.Contains(m.Text, "topic 43?") && topic != 43 {
				t.Fatalf("reply %q landed in topic %d", m.Text, topic)
			}
		}
	}
}
