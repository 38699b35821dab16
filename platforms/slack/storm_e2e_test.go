package slack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

const (
	longParts  = 4
	longFiller = 2800 // runes of filler per part: two never fit one 3,000-rune part
	askLong    = "please answer at length"
)

// TestEndToEnd429StormAndLongAnswer: every method the answer path uses
// answers 429 (Retry-After 1) a few times — posting, editing the preview,
// reading users, setting the status, opening the socket — and a long
// answer is split. Every question is answered once, every part shown
// once and in order, and the parts rejoin to the model's text.
func TestEndToEnd429StormAndLongAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	fake, world := newFake(t), gatewaytest.NewWorld(t)
	long := gatewaytest.PartedReply(longParts, longFiller)
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), askLong) {
			// Streamed slower than the preview interval: the preview is
			// posted and edited (chat.update) before the answer ends.
			return codextest.Reply{Text: long, Chunks: 4, ChunkDelay: 600 * time.Millisecond}
		}
		return codextest.DefaultReply(req)
	})
	for _, m := range []string{"chat.postMessage", "chat.update", "users.info", "assistant.threads.setStatus", "apps.connections.open"} {
		fake.Inject429(m, 1, 2)
	}
	startStack(t, ctx, world, fake, gateway.Config{})
	var roots []string
	for _, q := range []string{"first question", "second question", askLong} {
		roots = append(roots, fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: q, MentionBot: true}))
	}
	waitReply(t, fake, channel, "first question")
	waitReply(t, fake, channel, "second question")
	if !fake.WaitFor(90*time.Second, func() bool { return botReplies(fake, channel, gatewaytest.PartMarker(longParts-1, longParts)) > 0 }) {
		t.Fatal("the long answer's last part never came")
	}
	for _, q := range []string{"first question", "second question"} {
		if n := botReplies(fake, channel, q); n != 1 {
			t.Errorf("%d answers to %q, want 1", n, q)
		}
	}
	var joined strings.Builder
	for _, m := range fake.Thread(channel, roots[2]) {
		if m.BotID != "" {
			joined.WriteString(slacktest.Markdown(m))
		}
	}
	if got := joined.String(); got != strings.TrimSpace(long) && got != long {
		t.Errorf("the long answer's parts do not rejoin to it (%d vs %d runes)", len([]rune(got)), len([]rune(long)))
	}
	for _, m := range []string{"chat.postMessage", "chat.update", "users.info", "apps.connections.open"} {
		if fake.RateLimited(m) == 0 {
			t.Errorf("%s was never rate limited: the storm did not reach it", m)
		}
	}
}
