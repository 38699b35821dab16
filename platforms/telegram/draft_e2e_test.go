package telegram_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// TestEndToEndDraftStreamingAndItsFallback: with telegram.draft_streaming
// on, a private chat's answer from the real codex streams as a draft and
// arrives as one new message, never edited, replying to the question; once
// the Bot API refuses drafts, the next answer streams as the edited
// preview message instead, its text whole and sent once.
func TestEndToEndDraftStreamingAndItsFallback(t *testing.T) {
	t.Parallel() // its own fake Bot API, store and codex home
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		r := codextest.DefaultReply(req)
		// Slower than the preview interval below, so the answer shows
		// before its turn ends.
		r.Chunks, r.ChunkDelay = 4, 400*time.Millisecond
		return r
	})
	world.Start(t, ctx, gateway.Config{PreviewInterval: 100 * time.Millisecond}, func(st *store.Store) []gateway.Platform {
		tg, err := telegram.New(telegram.Config{Token: telegramtest.Token, APIURL: srv.URL, AllowedUsers: []int64{1001},
			Cursor: st, PollTimeout: time.Second, RetryBackoff: 20 * time.Millisecond, Logger: zaptest.NewLogger(t),
			DraftStreaming: true})
		if err != nil {
			t.Fatalf("telegram.New: %v", err)
		}
		return []gateway.Platform{tg}
	})

	const first = "ECHO: tell me about the drafts of this answer"
	asked := srv.Text(dm, alice, 0, "tell me about the drafts of this answer", nil)
	answer := waitAnswer(t, srv, dm.ID, first)
	if answer.Edits != 0 || answer.ReplyTo != asked.ID {
		t.Errorf("the answer was edited %d times and replies to %d; want a new message replying to %d",
			answer.Edits, answer.ReplyTo, asked.ID)
	}
	drafts := srv.Drafts(dm.ID)
	if len(drafts) != 1 || len(drafts[0].Versions) == 0 || !drafts[0].Ended {
		t.Fatalf("drafts = %+v, want one streamed and ended by the answer", drafts)
	}
	t.Logf("the draft showed %q", drafts[0].Versions)
	for _, v := range drafts[0].Versions {
		if !strings.HasPrefix(first, v) {
			t.Errorf("the draft showed %q, not a beginning of the answer %q", v, first)
		}
	}

	srv.RefuseDrafts(true)
	const second = "ECHO: and now without drafts, please"
	srv.Text(dm, alice, 0, "and now without drafts, please", nil)
	answer = waitAnswer(t, srv, dm.ID, second)
	if answer.Edits == 0 {
		t.Errorf("the second answer was never edited: want the refused draft's preview message edited into it")
	}
	t.Logf("the preview message showed %q", answer.Versions)
	for _, v := range answer.Versions {
		if !strings.HasPrefix(second, v) {
			t.Errorf("the preview showed %q, not a beginning of the answer %q", v, second)
		}
	}
	if n := len(srv.Drafts(dm.ID)); n != 1 {
		t.Errorf("%d drafts after the refusal, want still 1", n)
	}
}

// waitAnswer waits for the chat's one message reading answer and returns
// it; a second one fails the test.
func waitAnswer(t *testing.T, srv *telegramtest.Server, chat int64, answer string) telegramtest.Message {
	t.Helper()
	srv.WaitFor(60*time.Second, "the answer "+answer, func() bool {
		return len(containing(srv.Messages(chat, 0), answer)) > 0
	})
	got := containing(srv.Messages(chat, 0), answer)
	if len(got) != 1 {
		t.Fatalf("%d messages read %q, want 1: %+v", len(got), answer, got)
	}
	return got[0]
}
