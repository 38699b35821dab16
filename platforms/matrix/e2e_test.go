package matrix_test

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
	"github.com/gatewayd/gatewayd/platforms/matrix"
	"github.com/gatewayd/gatewayd/platforms/matrix/matrixtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

const (
	alice = "@alice:fake.test"
	bob   = "@bob:fake.test"
	bot   = matrixtest.BotUser
)

func newAdapter(t testing.TB, url string, st *store.Store, cmds []gateway.CommandInfo) *matrix.Adapter {
	a, err := matrix.New(matrix.Config{Homeserver: url, UserID: bot, AccessToken: matrixtest.BotToken,
		AllowedUsers: []string{alice, bob}, Cursor: st, Commands: cmds, Logger: zaptest.NewLogger(t),
		SyncTimeout: 5 * time.Second, RetryBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("matrix.New: %v", err)
	}
	return a
}

// testCommands stand for the gateway's commands (the daemon passes
// Gateway.Commands).
var testCommands = []gateway.CommandInfo{{Name: "new"}, {Name: "approve"}, {Name: "deny"}, {Name: "stop"},
	{Name: "status"}, {Name: "help"}, {Name: "fork"}, {Name: "retry"}}

// startStack runs gatewayd (real store and codex) with a Matrix adapter
// talking to the fake homeserver.
func startStack(t *testing.T, ctx context.Context, w *gatewaytest.World, srv *matrixtest.Server, cfg gateway.Config) *gatewaytest.Stack {
	t.Helper()
	return w.Start(t, ctx, cfg, func(st *store.Store) []gateway.Platform {
		return []gateway.Platform{newAdapter(t, srv.URL, st, testCommands)}
	})
}

// Environment of TestMatrixChild: the fake homeserver and the directories
// that outlive the child.
const (
	childHS   = "GATEWAYD_MX_HS"
	childHome = "GATEWAYD_MX_HOME"
	childWork = "GATEWAYD_MX_WORK"
)

// TestMatrixChild is the child process of the kill -9 tests: gatewayd with
// the real store, the real app-server (fake model) and the Matrix adapter,
// against the parent's fake homeserver. It runs until it is killed.
func TestMatrixChild(t *testing.T) {
	hs := os.Getenv(childHS)
	if hs == "" {
		t.Skip("helper process for the Matrix kill -9 tests")
	}
	work := os.Getenv(childWork)
	world := &gatewaytest.World{Model: codextest.NewModel(t), Home: os.Getenv(childHome),
		DB: filepath.Join(work, "gatewayd.db"), Work: work}
	// The parent cannot read this process's model: a question about the
	// context is answered with what the context holds.
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), askParts) {
			return codextest.Reply{Text: gatewaytest.PartedReply(replyParts, partFiller)}
		}
		if strings.Contains(req.LastUserText(), "which fruit") {
			in := req.InputText()
			return codextest.Reply{Text: fmt.Sprintf("CONTEXT apple=%v pear=%v",
				strings.Contains(in, "APPLE"), strings.Contains(in, "PEAR"))}
		}
		return codextest.DefaultReply(req)
	})
	world.Start(t, context.Background(), gateway.Config{}, func(st *store.Store) []gateway.Platform {
		return []gateway.Platform{newAdapter(t, hs, st, testCommands)}
	})
	fmt.Println("READY")
	select {} // killed here
}

type child struct {
	env []string
}

func newChild(t *testing.T, srv *matrixtest.Server) child {
	return child{env: []string{childHS + "=" + srv.URL, childHome + "=" + t.TempDir(), childWork + "=" + t.TempDir()}}
}

func (c child) start(t *testing.T) *gatewaytest.Child {
	t.Helper()
	ch := gatewaytest.StartChild(t, "TestMatrixChild", c.env...)
	ch.Expect(t, "READY")
	return ch
}

// shownWith counts the bot's messages in room (edits applied) containing s.
func shownWith(srv *matrixtest.Server, room, s string) int {
	n := 0
	for _, text := range srv.Shown(room, bot) {
		if strings.Contains(text, s) {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, srv *matrixtest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := srv.WaitFor(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v; the bot shows %q", what, err, srv.Shown(lastRoom, bot))
	}
}

// lastRoom is the room a failing wait prints (tests here use one room each).
var lastRoom string

func privateRoom(srv *matrixtest.Server, members ...string) string {
	room := srv.CreateRoom(matrixtest.RoomOptions{Creator: alice, Members: members, Invite: []string{bot}})
	lastRoom = room
	return room
}

// TestEndToEndThreadLaneResumesAfterKillNine: a room lane and a thread
// lane in it talk to the real codex; the daemon is killed with -9 and a
// new one answers in the thread with the thread's context and not the
// room's; nothing is answered twice.
func TestEndToEndThreadLaneResumesAfterKillNine(t *testing.T) {
	processtest.SkipWhenShort(t, "kills a child gateway with SIGKILL")
	srv := matrixtest.New(t)
	c := newChild(t, srv)
	first := c.start(t)
	room := privateRoom(srv)
	waitFor(t, srv, "the join", func() bool { return srv.Membership(room, bot) == "join" })
	root := srv.Post(room, alice, "remember PEAR in the room")
	waitFor(t, srv, "the room's answer", func() bool { return shownWith(srv, room, "]: remember PEAR") == 1 })
	srv.PostInThread(room, alice, root, "remember APPLE in the thread")
	waitFor(t, srv, "the thread's answer", func() bool { return shownWith(srv, room, "]: remember APPLE") == 1 })
	// A later message's answer in the same lane means the APPLE turn is
	// over (a turn killed mid-way is reported cut off, rightly).
	srv.PostInThread(room, alice, root, "sentinel")
	waitFor(t, srv, "the sentinel's answer", func() bool { return shownWith(srv, room, "ECHO: [alice]: sentinel") == 1 })
	first.Kill()

	srv.PostInThread(room, alice, root, "which fruit, thread?") // said while the daemon is down
	second := c.start(t)
	defer second.Kill()
	waitFor(t, srv, "the answer after the restart", func() bool { return shownWith(srv, room, "CONTEXT") == 1 })
	if shownWith(srv, room, "CONTEXT apple=true pear=false") != 1 {
		t.Fatalf("the thread's context after the restart: %q; want APPLE and not PEAR", srv.Shown(room, bot))
	}
	answer := lastBotEventWith(srv, room, "CONTEXT")
	rel, _ := answer.Content["m.relates_to"].(map[string]any)
	if rel["rel_type"] != "m.thread" || rel["event_id"] != root {
		t.Fatalf("the thread's answer is not in the thread: %v", answer.Content)
	}
	for _, s := range []string{"remember PEAR", "remember APPLE"} {
		if n := shownWith(srv, room, "ECHO: [alice]: "+s); n != 1 {
			t.Errorf("%d answers to %q, want 1: %q", n, s, srv.Shown(room, bot))
		}
	}
}

// lastBotEventWith is the bot's last message event (or the one an edit of it
// showing s replaced) whose text contains s.
func lastBotEventWith(srv *matrixtest.Server, room, s string) matrixtest.Event {
	var found matrixtest.Event
	for _, e := range srv.Sent(room, bot, "m.room.message") {
		body, _ := e.Content["body"].(string)
		if nc, ok := e.Content["m.new_content"].(map[string]any); ok {
			body, _ = nc["body"].(string)
			rel, _ := e.Content["m.relates_to"].(map[string]any)
			if orig, ok := srv.Event(rel["event_id"].(string)); ok && strings.Contains(body, s) {
				found = orig
			}
			continue
		}
		if strings.Contains(body, s) {
			found = e
		}
	}
	return found
}

const (
	askParts   = "please answer in parts"
	replyParts = 3
	partFiller = 16000 // bytes of filler per part: one part per event (16 KiB budget)
)

// TestKillNineAfterSendBeforeOutboxClosedPostsOnce: the child is killed
// while the homeserver holds part 1 of a three-part reply. Either the
// homeserver stored it with its answer lost to the crash (the restart
// sends it again with the same transaction id and is given the same
// event), or it never arrived (the restart sends it). Each part is shown
// exactly once, in order.
func TestKillNineAfterSendBeforeOutboxClosedPostsOnce(t *testing.T) {
	processtest.SkipWhenShort(t, "kills a child gateway with SIGKILL")
	for _, created := range []bool{true, false} {
		t.Run(fmt.Sprintf("stored=%v", created), func(t *testing.T) {
			srv := matrixtest.New(t)
			c := newChild(t, srv)
			held := srv.Hold("PUT send", gatewaytest.PartMarker(1, replyParts))
			first := c.start(t)
			room := privateRoom(srv)
			waitFor(t, srv, "the join", func() bool { return srv.Membership(room, bot) == "join" })
			srv.Post(room, alice, askParts)
			select {
			case <-held.Arrived():
			case <-time.After(60 * time.Second):
				t.Fatal("part 1 never reached the homeserver")
			}
			first.Kill()
			if created {
				held.Release()
			} else {
				held.Drop()
			}
			second := c.start(t)
			defer second.Kill()
			last := gatewaytest.PartMarker(replyParts-1, replyParts)
			waitFor(t, srv, "the last part", func() bool { return shownWith(srv, room, last) == 1 })
			shown := srv.Shown(room, bot)
			at := -1
			for i := range replyParts {
				n, pos := 0, -1
				for j, text := range shown {
					if strings.Contains(text, gatewaytest.PartMarker(i, replyParts)) {
						n, pos = n+1, j
					}
				}
				if n != 1 || pos <= at {
					t.Fatalf("part %d shown %d times (at %d, previous at %d): %d messages", i, n, pos, at, len(shown))
				}
				at = pos
			}
			if created && srv.TxnReplays() == 0 {
				t.Fatal("the stored part was not retried with its transaction id")
			}
		})
	}
}
