package discord_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
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
	srv   *discordtest.Server
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
	dc, err := discord.New(discord.Config{
		Token:        discordtest.Token,
		APIURL:       e.srv.URL(),
		AllowedUsers: []string{allowed},
		Cursor:       st,
		Logger:       log,
	})
	if err != nil {
		t.Fatalf("discord.New: %v", err)
	}
	g, err := gateway.New(gateway.Config{
		Thread:       codex.ThreadConfig{Cwd: e.work},
		DrainTimeout: 20 * time.Second,
		Logger:       log,
	}, st, cx)
	if err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	g.AddPlatform(dc)
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

// TestEndToEndThreadsKeepTheirContextAcrossRestart: two Discord threads talk
// to the real codex (fake model); the daemon restarts between messages, and
// one message is posted while it is down (backfill). Each thread's later turn
// carries its own first message and not the other's; nothing is answered twice.
func TestEndToEndThreadsKeepTheirContextAcrossRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	dir := t.TempDir()
	env := &e2eEnv{
		srv: newServer(t, channel), model: codextest.NewModel(t), home: codextest.Home(t),
		db: filepath.Join(dir, "gatewayd.db"), work: dir,
	}
	env.srv.AddThread("11", channel, "5")
	env.srv.AddThread("12", channel, "5")
	say := func(thread, text string, mention bool) {
		env.srv.Post(discordtest.Post{ChannelID: thread, AuthorID: allowed, Content: text, MentionBot: mention})
	}
	replies := func(thread, want string) int {
		n := 0
		for _, m := range env.srv.BotMessages(thread) {
			if strings.Contains(m.Content, want) {
				n++
			}
		}
		return n
	}
	waitReply := func(thread, want string) {
		t.Helper()
		if !env.srv.WaitFor(60*time.Second, func() bool { return replies(thread, want) > 0 }) {
			t.Fatalf("no reply containing %q in thread %s: %+v", want, thread, env.srv.BotMessages(thread))
		}
	}

	d := env.start(t, ctx)
	say("11", "remember APPLE", true)
	say("12", "remember PEAR", true)
	waitReply("11", "ECHO: remember APPLE")
	waitReply("12", "ECHO: remember PEAR")
	d.shutdown(t)

	// Posted while the daemon is down: answered once after the restart.
	say("11", "which fruit, thread 11?", false)
	d = env.start(t, ctx)
	defer d.shutdown(t)
	say("12", "which fruit, thread 12?", false)
	waitReply("11", "thread 11?")
	waitReply("12", "thread 12?")

	for _, tt := range []struct{ name, marker, own, other string }{
		{name: "thread 11", marker: "thread 11?", own: "APPLE", other: "PEAR"},
		{name: "thread 12", marker: "thread 12?", own: "PEAR", other: "APPLE"},
	} {
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
				t.Fatalf("context after restart: own %q present=%v, other %q present=%v",
					tt.own, strings.Contains(input, tt.own), tt.other, strings.Contains(input, tt.other))
			}
		})
	}
	// /new starts a fresh conversation in thread 11 only.
	env.srv.SlashCommand("11", "new", allowed)
	say("11", "fresh start, thread 11?", false)
	say("12", "still PEAR, thread 12?", false)
	waitReply("11", "fresh start, thread 11?")
	waitReply("12", "still PEAR, thread 12?")
	for _, r := range env.model.Requests() {
		switch last := r.LastUserText(); {
		case strings.Contains(last, "fresh start") && strings.Contains(r.InputText(), "APPLE"):
			t.Error("after /new, thread 11 still carries APPLE")
		case strings.Contains(last, "still PEAR") && !strings.Contains(r.InputText(), "remember PEAR"):
			t.Error("/new in thread 11 reset thread 12")
		}
	}
	for _, c := range []struct{ thread, text string }{
		{"11", "remember APPLE"}, {"12", "remember PEAR"}, {"11", "which fruit, thread 11?"},
		{"12", "which fruit, thread 12?"}, {"11", "fresh start"}, {"12", "still PEAR"},
	} {
		if n := replies(c.thread, c.text); n != 1 {
			t.Errorf("thread %s: %d replies containing %q, want 1: %+v", c.thread, n, c.text, env.srv.BotMessages(c.thread))
		}
	}
}
