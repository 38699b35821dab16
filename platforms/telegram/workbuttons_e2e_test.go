package telegram_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

// TestEndToEndWorkViewClosingLineOffersDiffAndUndo: in a lane with a git
// worktree, the status message of a turn that ran a command collapses to
// its summary with Diff and Undo buttons; pressing Undo runs /undo, which
// takes the file the turn wrote back out of the worktree.
func TestEndToEndWorkViewClosingLineOffersDiffAndUndo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	world.Model.Respond(gatewaytest.RunsCommand("write the file", "echo UNDO-ME > undo.txt"))
	repo, root := gatewaytest.GitRepo(t), t.TempDir()
	world.Features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	startStackWith(t, ctx, world, srv, gateway.Config{PreviewInterval: 100 * time.Millisecond, Worktrees: root})
	srv.Text(dm, alice, 0, "/project app", nil)
	srv.WaitFor(30*time.Second, "the /project answer", func() bool { return countContaining(srv.Messages(dm.ID, 0), "Project: app") > 0 })
	srv.Text(dm, alice, 0, "please write the file", nil)
	var status telegramtest.Message
	srv.WaitFor(60*time.Second, "the closing line with buttons", func() bool {
		for _, m := range silentMessages(srv.Messages(dm.ID, 0)) {
			if strings.Contains(m.Markup, `"cmd:undo"`) && strings.Contains(m.Markup, `"cmd:diff"`) {
				status = m
				return true
			}
		}
		return false
	})
	if !strings.HasPrefix(status.Text, "1 command") {
		t.Errorf("the buttons are on %q, want the summary line", status.Text)
	}
	written := filepath.Join(root, files.DirName("v1:telegram:dm:1001"), files.DirName("app"), "undo.txt")
	if _, err := os.Stat(written); err != nil {
		t.Fatalf("the turn's file is not in the worktree: %v", err)
	}
	srv.Press(alice, status, "cmd:undo")
	srv.WaitFor(60*time.Second, "the undo answer", func() bool { return countContaining(srv.Messages(dm.ID, 0), "Undid the last turn") == 1 })
	if _, err := os.Stat(written); !os.IsNotExist(err) {
		t.Errorf("after Undo the file is still there: %v", err)
	}
}
