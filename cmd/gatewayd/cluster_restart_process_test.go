package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// A node restarted after kill -9 with its own state_dir and node id takes
// its leases back at once instead of waiting them out: its lane's new lease
// (and the Telegram poller's) is acquired before the dead process's lease
// would have expired, by the database's clock, with a higher token, and the
// lane goes on with its context. Meanwhile a second process with the same
// node id, or on the same state_dir, is refused at start (exit 2, naming
// the key).
func TestProcessClusterRestartTakesBackItsLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs daemons")
	}
	const ttl = 30 * time.Second // far longer than a restart takes
	const chat = int64(7101)
	w := newOneChatCluster(t, chat)
	dsn, tg, model, bin, say := w.dsn, w.tg, w.model, w.bin, w.say
	users := w.users
	node := writeClusterNode(t, dsn, "node-a", ttl, tg, model, users).start(t, bin)
	waitHealthy(t, node.api, node.daemonProc)
	say("remember code R-77")
	waitMessages(t, tg, chat, 1, 60*time.Second)
	waitLogEvents(t, node.daemonProc, "cluster.shipped", laneIs(dmKey(chat)))

	twin := writeClusterNode(t, dsn, "node-a", ttl, tg, model, users)
	if code, out := runToExit(t, bin, twin.cfgFile); code != 2 || !strings.Contains(out, "cluster.node_id") {
		t.Errorf("a second process as node-a: exit %d, want 2 with a message naming cluster.node_id:\n%s", code, out)
	}
	if code, out := runToExit(t, bin, node.cfgFile); code != 2 || !strings.Contains(out, "state_dir") {
		t.Errorf("a second process on node-a's state_dir: exit %d, want 2 with a message naming state_dir:\n%s", code, out)
	}

	waitOutboxSent(t, dsn)
	node.kill9(t)
	names := []string{cluster.LanePrefix + dmKey(chat), cluster.PollerLease}
	dead := readLeases(t, dsn, names)
	node.start(t, bin)
	waitHealthy(t, node.api, node.daemonProc)
	say("what was my code?")
	waitMessages(t, tg, chat, 2, 60*time.Second)
	req, ok := model.LastRequestWith("what was my code?")
	if !ok || !strings.Contains(req.InputText(), "R-77") {
		t.Errorf("the restarted node's model request lacks the earlier exchange (found %v)", ok)
	}
	back := readLeases(t, dsn, names)
	for _, name := range names {
		old, cur := dead[name], back[name]
		if cur.holder != "node-a" || !cur.acquired.Before(old.expires) || cur.token <= old.token {
			t.Errorf("lease %s after the restart: holder %q token %d acquired %v; the dead process's token %d expiring %v; "+
				"want node-a's with a higher token, taken before that", name, cur.holder, cur.token, cur.acquired, old.token, old.expires)
		}
		t.Logf("lease %s taken back %v before the dead process's lease would have expired", name, old.expires.Sub(cur.acquired).Round(time.Millisecond))
	}
}

// runToExit runs `gatewayd run` with cfgFile and returns its exit code and
// output; it must exit on its own.
func runToExit(t *testing.T, bin, cfgFile string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--config", cfgFile)
	cmd.Env = append(daemonEnv(), codextest.Env()...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("gatewayd run with %s did not exit:\n%s", cfgFile, out)
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(fmt.Errorf("run %s: %w", bin, err))
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// TestProcessClusterSupersededNodeExits: a node paused past its heartbeat
// while another process joins under its node id (a second machine given
// the same id) stops when it resumes, with exit 2 naming cluster.node_id,
// instead of lingering inert; the newer process keeps serving the lane.
func TestProcessClusterSupersededNodeExits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs daemons")
	}
	const chat = int64(7201)
	w := newOneChatCluster(t, chat)
	tg, say := w.tg, w.say
	node := func() *clusterProc { return writeClusterNode(t, w.dsn, "node-a", clusterTTL, tg, w.model, w.users) }
	old := node().start(t, w.bin)
	waitHealthy(t, old.api, old.daemonProc)
	say("first")
	waitMessages(t, tg, chat, 1, 60*time.Second)

	if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Its own state_dir is locked by the paused process, so the newer one
	// runs elsewhere: it joins once the paused heartbeat is a TTL old.
	newer := node().start(t, w.bin)
	waitHealthy(t, newer.api, newer.daemonProc)
	if err := old.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the superseded process is still running:\n%s", old.logs())
	}
	if code := old.cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(old.logs(), "cluster.node_id") {
		t.Errorf("superseded process: exit %d, want 2 with an error naming cluster.node_id:\n%s", code, old.logs())
	}
	say("second")
	waitMessages(t, tg, chat, 2, 60*time.Second)
}

// oneChatCluster is what the single-chat cluster process tests share: a
// database, the fake Telegram and model, the built daemon, and one private
// chat whose user is allowed.
type oneChatCluster struct {
	dsn, bin string
	tg       *telegramtest.Server
	model    *codextest.Model
	users    []string
	say      func(text string)
}

func newOneChatCluster(t *testing.T, chat int64) oneChatCluster {
	t.Helper()
	w := oneChatCluster{dsn: pgtest.Shared(t).NewDatabase(t), tg: telegramtest.New(t), model: codextest.NewModel(t),
		bin: buildDaemon(t), users: []string{strconv.FormatInt(chat, 10)}}
	w.say = func(text string) {
		w.tg.Text(models.Chat{ID: chat, Type: models.ChatTypePrivate}, models.User{ID: chat, FirstName: "u"}, 0, text, nil)
	}
	return w
}
