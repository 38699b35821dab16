package discord_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

// TestEndToEndWorkViewClosingLineOffersDiffAndUndo: in a thread whose
// lane has a git worktree, the status message of a turn that ran a command
// is edited to its summary with Diff and Undo buttons; pressing Diff shows
// the file the turn wrote.
func TestEndToEndWorkViewClosingLineOffersDiffAndUndo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	srv.AddThread("11", channel, "5")
	world.Model.Respond(gatewaytest.RunsCommand("write the file", "echo DIFF-ME > diff.txt"))
	repo, root := gatewaytest.GitRepo(t), t.TempDir()
	world.Features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	startStackWith(t, ctx, world, srv, gateway.Config{PreviewInterval: 100 * time.Millisecond, Worktrees: root})
	say := func(text string) {
		srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: text, MentionBot: true})
	}
	waitText := func(want string) {
		t.Helper()
		if !srv.WaitFor(60*time.Second, func() bool {
			return slices.ContainsFunc(srv.BotMessages("11"), func(m discordtest.SentMessage) bool { return strings.Contains(m.Content, want) })
		}) {
			t.Fatalf("no message containing %q: %+v", want, srv.BotMessages("11"))
		}
	}
	say("/project app")
	waitText("Project: app")
	say("please write the file")
	var closing discordtest.SentMessage
	if !srv.WaitFor(60*time.Second, func() bool {
		for _, e := range srv.Edits() {
			if e.ChannelID == "11" && slices.Contains(e.ButtonIDs, "cmd:undo") && slices.Contains(e.ButtonIDs, "cmd:diff") {
				closing = e
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no status message got Diff and Undo: %+v", srv.Edits())
	}
	if !strings.HasPrefix(closing.Content, "1 command") {
		t.Errorf("the buttons are on %q, want the summary line", closing.Content)
	}
	if _, err := os.Stat(filepath.Join(root, files.DirName("v1:discord:thread:11"), files.DirName("app"), "diff.txt")); err != nil {
		t.Fatalf("the turn's file is not in the worktree: %v", err)
	}
	srv.PressButton("11", closing.ID, "cmd:diff", allowed)
	waitText("+DIFF-ME")
}
