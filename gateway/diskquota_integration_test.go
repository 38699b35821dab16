package gateway_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// bigFileMarker makes the fake model have the agent write 3 MB into its
// working directory.
const bigFileMarker = "WRITE-BIG"

func bigFileModel(req codextest.Request) codextest.Reply {
	if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), bigFileMarker) {
		return codextest.Reply{ToolCall: codextest.ExecCommand("call_big", "head -c 3000000 /dev/zero > big")}
	}
	return codextest.DefaultReply(req)
}

// Through the real app-server: a command the agent runs writes 3 MB into
// the lane's worktree, over its 1 MiB quota. The turn is answered; the
// lane is told once that it is over (the notice rides on its next
// request); its next messages are refused without a turn; once the file is deleted (by the
// operator: the lane cannot run a turn to do it) the next message runs.
func TestIntegrationDiskQuotaRefusesUntilFilesAreDeleted(t *testing.T) {
	w := newWorld(t)
	w.model.Respond(bigFileModel)
	repo, root := gitRepo(t), t.TempDir()
	w.features.DiskQuota = 1 << 20
	w.features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	gw := w.start(t, gateway.Config{Worktrees: root})

	gw.ask(t, "q", "/project app")
	r := gw.ask(t, "q", "please "+bigFileMarker)
	if r.Status != "completed" {
		t.Fatalf("the writing turn: %+v", r)
	}
	big := filepath.Join(worktreeOf(root, "q", "app"), "big")
	if info, err := os.Stat(big); err != nil || info.Size() != 3000000 {
		t.Fatalf("the command did not write %s: %v", big, err)
	}
	turns := len(w.model.Requests())

	refused := gw.ask(t, "q", "and now?")
	if !strings.HasPrefix(refused.Reply, "Not run: ") || !strings.Contains(refused.Reply, "over the disk quota of 1 MiB") {
		t.Errorf("the next message answered %q, want the refusal", refused.Reply)
	}
	if !strings.Contains(strings.Join(refused.Notices, "\n"), "Its next messages will not run") {
		t.Errorf("the lane was not told it went over: notices %q", refused.Notices)
	}
	again := gw.ask(t, "q", "still?")
	if !strings.HasPrefix(again.Reply, "Not run: ") {
		t.Errorf("the second message answered %q, want the refusal", again.Reply)
	}
	if strings.Contains(strings.Join(again.Notices, "\n"), "Its next messages will not run") {
		t.Errorf("the lane was told twice: %q", again.Notices)
	}
	if n := len(w.model.Requests()); n != turns {
		t.Errorf("the refused message reached the model (%d requests, had %d)", n, turns)
	}
	// About 3 MiB: the file, and what git keeps of the worktree beside it.
	if st := gw.ask(t, "q", "/status"); !regexp.MustCompile(`Disk: (2\.9|3\.[0-9]) MiB of 1 MiB \(lanes\.disk_quota\), over`).MatchString(st.Reply) {
		t.Errorf("/status lacks the disk line: %q", st.Reply)
	}

	if err := os.Remove(big); err != nil {
		t.Fatal(err)
	}
	if r := gw.ask(t, "q", "back?"); r.Reply != "ECHO: back?" {
		t.Errorf("after deleting the file: %q, want the turn's answer", r.Reply)
	}
}
