package telegram_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestEndToEndUsageLimitPausesAndResumes: the fake model answers HTTP 429
// usage_limit_reached (resetting in about 2 s) until the reset, through
// the real codex app-server. Two forum topics are told once each when work
// continues, and after the reset every message runs, in order per topic,
// none lost and none answered twice.
func TestEndToEndUsageLimitPausesAndResumes(t *testing.T) {
	t.Parallel() // its own fake Bot API, store and codex home
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	forum := models.Chat{ID: -1001, Type: models.ChatTypeSupergroup, IsForum: true}
	alice := models.User{ID: 1001, FirstName: "Alice"}
	say := func(topic int, text string) { srv.Text(forum, alice, topic, "@gatewayd_test_bot "+text, nil) }
	startStack(t, ctx, world, srv)
	// A reset 1.5–2.5 s away: the headers carry whole seconds.
	reset := time.Now().Add(2500 * time.Millisecond).Truncate(time.Second)
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if time.Now().Before(reset) {
			return codextest.UsageLimit(reset)
		}
		return codextest.DefaultReply(req)
	})

	say(42, "first in 42")
	srv.WaitFor(30*time.Second, "the usage-limit notice in topic 42", func() bool {
		return len(containing(srv.Messages(forum.ID, 42), "usage limit")) > 0
	})
	say(42, "second in 42")
	say(42, "third in 42")
	say(43, "first in 43")

	markers := map[int][]string{42: {"first in 42", "second in 42", "third in 42"}, 43: {"first in 43"}}
	for topic, texts := range markers {
		for _, text := range texts {
			srv.WaitFor(60*time.Second, "the reply to "+text, func() bool {
				return len(containing(srv.Messages(forum.ID, topic), "ECHO: [Alice]: "+text)) > 0
			})
		}
	}
	if time.Now().Before(reset) {
		t.Fatalf("replies arrived before the reset at %v", reset)
	}

	wantNotice := "Codex usage limit reached; I'll continue at " + reset.In(time.Local).Format("15:04 MST")
	for topic, texts := range markers {
		msgs := srv.Messages(forum.ID, topic)
		notices := containing(msgs, "usage limit")
		if len(notices) != 1 || !strings.HasPrefix(notices[0].Text, wantNotice) {
			t.Errorf("topic %d usage notices = %+v, want exactly one starting %q", topic, notices, wantNotice)
		}
		last := -1
		for _, text := range texts {
			replies := containing(msgs, "ECHO: [Alice]: "+text)
			if len(replies) != 1 {
				t.Errorf("topic %d: %d replies to %q, want 1", topic, len(replies), text)
				continue
			}
			at := indexOf(msgs, replies[0].ID)
			if at < last {
				t.Errorf("topic %d: the reply to %q came out of order", topic, text)
			}
			last = at
		}
	}
	// The first message reached the model once before the reset (refused)
	// and ran once after it; the others ran once, after the reset.
	for text, want := range map[string]int{"first in 42": 2, "second in 42": 1, "third in 42": 1} {
		n := 0
		for _, r := range world.Model.Requests() {
			if strings.Contains(r.LastUserText(), text) {
				n++
			}
		}
		if n != want {
			t.Errorf("model requests for %q = %d, want %d", text, n, want)
		}
	}
}

func containing(msgs []telegramtest.Message, substr string) []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range msgs {
		if strings.Contains(m.Text, substr) {
			out = append(out, m)
		}
	}
	return out
}

func indexOf(msgs []telegramtest.Message, id int) int {
	for i, m := range msgs {
		if m.ID == id {
			return i
		}
	}
	return -1
}

// TestEndToEndUsageLimitPauseSurvivesRestart: a message refused for the
// usage limit stays in the inbox; the daemon restarts during the pause,
// which the next start keeps (from the store) without telling the lane
// again; /retry then runs the message once, and /status shows the turn's
// tokens from the store.
func TestEndToEndUsageLimitPauseSurvivesRestart(t *testing.T) {
	t.Parallel() // its own fake Bot API, store and codex home
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	reset := time.Now().Add(time.Hour)
	world.Model.Respond(func(codextest.Request) codextest.Reply { return codextest.UsageLimit(reset) })
	d := startStack(t, ctx, world, srv)
	srv.Text(dm, alice, 0, "wait for me", nil)
	srv.WaitFor(30*time.Second, "the usage-limit notice", func() bool {
		return len(containing(srv.Messages(dm.ID, 0), "usage limit")) > 0
	})
	d.Stop(t)

	// The restart keeps the pause (an hour away) and the lane's notice:
	// the message waits, and nobody is told twice.
	world.Model.Respond(codextest.DefaultReply)
	d = startStack(t, ctx, world, srv)
	srv.Text(dm, alice, 0, "/status", nil)
	srv.WaitFor(30*time.Second, "the status during the pause", func() bool {
		return len(containing(srv.Messages(dm.ID, 0), "Paused: Codex usage limit reached")) > 0
	})
	if n := len(containing(srv.Messages(dm.ID, 0), "ECHO: wait for me")); n != 0 {
		t.Fatalf("the waiting message ran during the restored pause (%d replies)", n)
	}
	if n := len(containing(srv.Messages(dm.ID, 0), "I'll continue at")); n != 1 {
		t.Errorf("%d usage-limit notices across the restart, want 1", n)
	}
	srv.Text(dm, alice, 0, "/retry", nil)
	srv.WaitFor(60*time.Second, "the reply after /retry", func() bool {
		return len(containing(srv.Messages(dm.ID, 0), "ECHO: wait for me")) > 0
	})
	// The text shows in the streamed preview before the turn is committed;
	// the commit has no signal of its own, so poll the store for it.
	lane := "v1:telegram:dm:1001"
	for {
		if _, ok, err := d.Store.LastTurnUsage(ctx, lane); err != nil || ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the turn's usage was never recorded")
		case <-time.After(10 * time.Millisecond):
		}
	}
	srv.Text(dm, alice, 0, "/status", nil)
	srv.WaitFor(30*time.Second, "the status", func() bool {
		return len(containing(srv.Messages(dm.ID, 0), "Last turn: ")) > 0
	})
	msgs := srv.Messages(dm.ID, 0)
	if n := len(containing(msgs, "ECHO: wait for me")); n != 1 {
		t.Errorf("%d replies to the waiting message, want 1", n)
	}
	status := containing(msgs, "Last turn: ")[0].Text
	if strings.Contains(status, "Last turn: 0 tokens") || !strings.Contains(status, "Context: ") {
		t.Errorf("/status after the turn:\n%s\nwant the context and the turn's tokens", status)
	}
}
