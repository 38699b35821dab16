package discord_test

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
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// Environment of TestPartsCrashChild: the fake Discord and the directories
// that outlive the child (database, CODEX_HOME, working directory).
const (
	partsChildAPI  = "GATEWAYD_DC_PARTS_API"
	partsChildHome = "GATEWAYD_DC_PARTS_HOME"
	partsChildWork = "GATEWAYD_DC_PARTS_WORK"
)

const (
	replyParts  = 6
	askSixParts = "please answer in six parts"
	partFiller  = 1800 // characters of filler per part: two parts never fit one message
)

// partMarker opens part i of the long reply; the fake holds a part by it.
func partMarker(i int) string { return gatewaytest.PartMarker(i, replyParts) }

// sixPartReply is a reply that Discord's 2,000-character limit splits into exactly
// replyParts messages, one paragraph each.
func sixPartReply() string { return gatewaytest.PartedReply(replyParts, partFiller) }

// TestPartsCrashChild is the child process of
// TestKillNineBetweenPartsSendsEachPartOnce: gatewayd with the real store,
// the real codex app-server (fake model) and the Discord adapter, against
// the parent's fake Discord. It runs until it is killed.
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
	world.Start(t, context.Background(), gateway.Config{}, func(st *store.Store) []gateway.Platform {
		dc, err := discord.New(discord.Config{Token: discordtest.Token, APIURL: api,
			AllowedUsers: []string{allowed}, Cursor: st, Logger: zaptest.NewLogger(t)})
		if err != nil {
			fmt.Println("ERROR discord.New:", err)
			select {}
		}
		return []gateway.Platform{dc}
	})
	fmt.Println("READY")
	select {} // killed here
}

// A kill -9 between two parts of a six-part reply: the next process sends
// the remaining parts and each part is shown exactly once, in order. The
// parent holds part k+1 at the fake Discord, which proves part k was
// accepted and recorded (the adapter records a part before sending the
// next), and kills the child there. Either the held create never reaches
// Discord (dropped: the restart must not even ask for parts 0..k again),
// or Discord creates it with its answer lost to the crash (the restart
// asks again with the same nonce and is given that message).
func TestKillNineBetweenPartsSendsEachPartOnce(t *testing.T) {
	processtest.SkipWhenShort(t, "kills a child gateway with SIGKILL")
	for _, tc := range []struct {
		name       string
		killBefore int
		created    bool // Discord created the held part before the child died
	}{
		{name: "killed before part 1 reached Discord", killBefore: 1},
		{name: "killed before part 4 reached Discord", killBefore: 4},
		{name: "killed before part 5 reached Discord", killBefore: 5},
		{name: "killed after Discord created part 3, before its answer", killBefore: 3, created: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has its own fake Discord and directories
			srv := newServer(t, channel)
			home, work := t.TempDir(), t.TempDir()
			env := []string{partsChildAPI + "=" + srv.URL(), partsChildHome + "=" + home, partsChildWork + "=" + work}

			held := srv.HoldMatching("POST", messagesPath, partMarker(tc.killBefore))
			first := gatewaytest.StartChild(t, "TestPartsCrashChild", env...)
			first.Expect(t, "READY")
			srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: askSixParts, MentionBot: true})
			select {
			case <-held.Arrived():
			case <-time.After(90 * time.Second):
				t.Fatalf("part %d never reached the fake Discord", tc.killBefore)
			}
			first.Kill()
			if tc.created {
				held.Release()
			} else {
				held.Drop()
			}

			second := gatewaytest.StartChild(t, "TestPartsCrashChild", env...)
			second.Expect(t, "READY")
			if !srv.WaitFor(60*time.Second, func() bool {
				return len(partsIn(creates(srv), replyParts-1)) > 0
			}) {
				t.Fatal("the last part never reached the fake Discord")
			}
			second.Kill()
			assertEachPartOnce(t, "shown", botTexts(srv))
			if !tc.created {
				// Not even asked again: a part Discord had is not sent again
				// (a nonce only dedupes within Discord's window of minutes).
				assertEachPartOnce(t, "created", creates(srv))
			}
		})
	}
}

func creates(srv *discordtest.Server) []string { return srv.CreateRequests(channel) }

// botTexts is what the channel shows from the bot, edits applied.
func botTexts(srv *discordtest.Server) []string {
	var out []string
	for _, m := range srv.BotMessages(channel) {
		out = append(out, m.Content)
	}
	return out
}

// partsIn returns the indexes of the texts that carry part i.
func partsIn(texts []string, i int) []int {
	var at []int
	for n, s := range texts {
		if strings.Contains(s, partMarker(i)) {
			at = append(at, n)
		}
	}
	return at
}

// assertEachPartOnce checks that every part is in exactly one of texts, in
// order. Part 0 may be missing from the creates: it can edit the preview.
func assertEachPartOnce(t *testing.T, what string, texts []string) {
	t.Helper()
	last := -1
	for i := range replyParts {
		at := partsIn(texts, i)
		if i == 0 && what == "created" && len(at) == 0 {
			continue // it replaced the streamed preview
		}
		if len(at) != 1 {
			t.Fatalf("part %d %s %d times, want exactly once", i, what, len(at))
		}
		if at[0] <= last {
			t.Fatalf("part %d %s before part %d", i, what, i-1)
		}
		last = at[0]
	}
}
