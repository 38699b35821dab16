package slack_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/platforms/slack"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// Environment of TestSlackCrashChild: the fake Slack and the directories
// that outlive the child (database, CODEX_HOME, working directory).
const (
	childAPI  = "GATEWAYD_SLACK_CRASH_API"
	childHome = "GATEWAYD_SLACK_CRASH_HOME"
	childWork = "GATEWAYD_SLACK_CRASH_WORK"
)

const (
	replyParts  = 6
	askSixParts = "please answer in six parts"
	partFiller  = 2800 // runes per part: two never fit one 3,000-rune part
)

func partMarker(i int) string { return gatewaytest.PartMarker(i, replyParts) }

// TestSlackCrashChild is the child process of the kill -9 tests: gatewayd
// with the real store, the real codex app-server (fake model) and the
// Slack adapter, against the parent's fake Slack. It runs until killed.
func TestSlackCrashChild(t *testing.T) {
	api := os.Getenv(childAPI)
	if api == "" {
		t.Skip("helper process for the kill -9 tests")
	}
	work := os.Getenv(childWork)
	world := &gatewaytest.World{Model: codextest.NewModel(t), Home: os.Getenv(childHome),
		DB: filepath.Join(work, "gatewayd.db"), Work: work}
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), askSixParts) {
			return codextest.Reply{Text: gatewaytest.PartedReply(replyParts, partFiller)}
		}
		return codextest.DefaultReply(req)
	})
	world.Start(t, context.Background(), gateway.Config{}, func(st *store.Store) []gateway.Platform {
		a, err := slack.New(slack.Config{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: api,
			AllowedUsers: []string{allowed}, Cursor: st, Logger: zaptest.NewLogger(t)})
		if err != nil {
			fmt.Println("ERROR slack.New:", err)
			select {}
		}
		return []gateway.Platform{a}
	})
	fmt.Println("READY")
	select {} // killed here
}

func startChild(t *testing.T, fake *slacktest.Server, home, work string) *gatewaytest.Child {
	t.Helper()
	c := gatewaytest.StartChild(t, "TestSlackCrashChild",
		childAPI+"="+fake.APIURL(), childHome+"="+home, childWork+"="+work)
	c.Expect(t, "READY")
	return c
}

// TestKillNineResumesThreadLaneWithContext: a thread lane is answered, the
// daemon is killed -9, a message is posted in the thread while it is
// down; the next daemon answers it once, on the same Codex thread, with
// the first message in its context.
func TestKillNineResumesThreadLaneWithContext(t *testing.T) {
	processtest.SkipWhenShort(t, "kills a child gateway with SIGKILL")
	fake := newFake(t)
	home, work := t.TempDir(), t.TempDir()
	first := startChild(t, fake, home, work)
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "remember MANGO", MentionBot: true})
	// The final reply, not the streamed preview: killed before the turn
	// ended, the next daemon would rightly say it was cut off.
	if !fake.WaitFor(60*time.Second, func() bool { return finalReplies(fake, "remember MANGO") > 0 }) {
		t.Fatal("no final reply")
	}
	first.Kill()
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "which fruit after the crash?", ThreadTS: root})
	second := startChild(t, fake, home, work)
	waitReply(t, fake, channel, "which fruit after the crash?")
	second.Kill()
	for _, want := range []string{"remember MANGO", "which fruit after the crash?"} {
		if n := botReplies(fake, channel, want); n != 1 {
			for _, m := range fake.Sent(channel) {
				t.Logf("sent %s (thread %s, edits %d, meta %s): %q", m.TS, m.ThreadTS, m.Edits, m.Metadata, slacktest.Markdown(m))
			}
			t.Errorf("%d replies containing %q, want 1", n, want)
		}
	}
	if !threadHas(fake, root, "which fruit after the crash?")() {
		t.Error("the answer is not in the thread")
	}
}

// TestKillNineBetweenPartsSendsEachPartOnce: a kill -9 between two parts
// of a six-part reply; the next process sends the rest and each part is
// shown exactly once, in order. The fake holds part k, which proves part
// k-1 was accepted and recorded. Either the held post never reaches Slack
// (dropped), or Slack posts it with its answer lost to the crash: the next
// process finds it by its metadata instead of posting it again.
func TestKillNineBetweenPartsSendsEachPartOnce(t *testing.T) {
	processtest.SkipWhenShort(t, "kills a child gateway with SIGKILL")
	for _, tc := range []struct {
		name       string
		killBefore int
		created    bool
	}{
		{name: "killed before part 1 reached Slack", killBefore: 1},
		{name: "killed before part 4 reached Slack", killBefore: 4},
		{name: "killed after Slack posted part 3, before its answer", killBefore: 3, created: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake(t)
			home, work := t.TempDir(), t.TempDir()
			held := fake.HoldMatching("chat.postMessage", partMarker(tc.killBefore))
			first := startChild(t, fake, home, work)
			fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: askSixParts, MentionBot: true})
			select {
			case <-held.Arrived():
			case <-time.After(90 * time.Second):
				t.Fatalf("part %d never reached the fake Slack", tc.killBefore)
			}
			first.Kill()
			if tc.created {
				held.Release()
			} else {
				held.Drop()
			}
			second := startChild(t, fake, home, work)
			if !fake.WaitFor(60*time.Second, func() bool { return botReplies(fake, channel, partMarker(replyParts-1)) > 0 }) {
				t.Fatal("the last part never came")
			}
			second.Kill()
			assertEachPartOnce(t, fake)
		})
	}
}

// finalReplies counts the bot's final replies containing want: a post
// of an outbox row (it carries the part metadata) or the preview the
// reply was edited into.
func finalReplies(fake *slacktest.Server, want string) int {
	n := 0
	for _, m := range fake.Sent(channel) {
		if (m.Metadata != nil || m.Edits > 0) && strings.Contains(slacktest.Markdown(m), want) {
			n++
		}
	}
	return n
}

// assertEachPartOnce checks every part is shown exactly once, in order.
func assertEachPartOnce(t *testing.T, fake *slacktest.Server) {
	t.Helper()
	var shown []string
	for _, m := range fake.Sent(channel) {
		shown = append(shown, slacktest.Markdown(m))
	}
	last := -1
	for i := range replyParts {
		var at []int
		for n, s := range shown {
			if strings.Contains(s, partMarker(i)) {
				at = append(at, n)
			}
		}
		if len(at) != 1 {
			t.Fatalf("part %d shown %d times, want once", i, len(at))
		}
		if at[0] <= last {
			t.Fatalf("part %d shown before part %d", i, i-1)
		}
		last = at[0]
	}
}
