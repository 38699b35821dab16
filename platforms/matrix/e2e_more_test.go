package matrix_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/platforms/matrix/matrixtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

func e2eContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// joined waits for the bot to join room.
func joined(t *testing.T, srv *matrixtest.Server, room string) {
	t.Helper()
	waitFor(t, srv, "the join", func() bool { return srv.Membership(room, bot) == "join" })
}

// TestSyncTokenNeverSkipsAnUncommittedEvent: five messages arrive in one
// batch; the child is killed while it answers the first (its reply held
// at the homeserver). After the restart every message is answered, or
// reported cut off by the restart, exactly once: none skipped, none twice.
func TestSyncTokenNeverSkipsAnUncommittedEvent(t *testing.T) {
	processtest.SkipWhenShort(t, "kills a child gateway with SIGKILL")
	srv := matrixtest.New(t)
	c := newChild(t, srv)
	first := c.start(t)
	room := privateRoom(srv)
	joined(t, srv, room)
	held := srv.Hold("PUT send", "msg-0")
	for i := range 5 {
		srv.Post(room, alice, fmt.Sprintf("msg-%d", i))
	}
	select {
	case <-held.Arrived():
	case <-time.After(60 * time.Second):
		t.Fatal("no reply reached the homeserver")
	}
	first.Kill()
	held.Drop()
	second := c.start(t)
	defer second.Kill()
	waitFor(t, srv, "every message answered", func() bool {
		for i := range 5 {
			if shownWith(srv, room, fmt.Sprintf("msg-%d", i)) == 0 {
				return false
			}
		}
		return true
	})
	for i := range 5 {
		if n := shownWith(srv, room, fmt.Sprintf("msg-%d", i)); n != 1 {
			t.Errorf("msg-%d: %d answers, want 1: %q", i, n, srv.Shown(room, bot))
		}
	}
}

// TestRateLimitBurstIsRetriedAsTheServerSays: sends refused with 429
// (retry_after_ms in the body, then only a Retry-After header) and a 502
// are retried by the outbox when the server says; the answer arrives
// once, and no retry came early.
func TestRateLimitBurstIsRetriedAsTheServerSays(t *testing.T) {
	processtest.SkipWhenShort(t, "runs the real app-server")
	ctx := e2eContext(t)
	srv, world := matrixtest.New(t), gatewaytest.NewWorld(t)
	startStack(t, ctx, world, srv, gateway.Config{})
	room := privateRoom(srv)
	joined(t, srv, room)
	srv.Fail("PUT send", matrixtest.Failure{Status: 429, Errcode: "M_LIMIT_EXCEEDED", RetryAfterMS: 300, Count: 3})
	srv.Post(room, alice, "first burst")
	waitFor(t, srv, "the first answer", func() bool { return shownWith(srv, room, "ECHO: [alice]: first burst") == 1 })
	srv.Fail("PUT send", matrixtest.Failure{Status: 429, Errcode: "M_LIMIT_EXCEEDED", Header: true, HeaderSecs: 1, Count: 2})
	srv.Fail("PUT send", matrixtest.Failure{Status: 502, Count: 1})
	srv.Post(room, alice, "second burst")
	waitFor(t, srv, "the second answer", func() bool { return shownWith(srv, room, "ECHO: [alice]: second burst") == 1 })
	if n := srv.EarlyRetries(); n != 0 {
		t.Fatalf("%d requests came before the retry-after elapsed", n)
	}
	for _, s := range []string{"first burst", "second burst"} {
		if n := shownWith(srv, room, "ECHO: [alice]: "+s); n != 1 {
			t.Errorf("%q answered %d times: %q", s, n, srv.Shown(room, bot))
		}
	}
}

// TestReactionApprovalByNonRequesterIsRefused: in a three-member room,
// Alice's turn asks to run a command; Bob's ✅ and Bob's typed !approve
// are refused (the command does not run), Alice's ✅ allows it, and the
// decision is shown, in a notice and on the edited prompt.
func TestReactionApprovalByNonRequesterIsRefused(t *testing.T) {
	processtest.SkipWhenShort(t, "runs the real app-server")
	ctx := e2eContext(t)
	srv, world := matrixtest.New(t), gatewaytest.NewWorld(t)
	world.Model.Respond(gatewaytest.RunsCommand("run the check", "echo CHECKED-$((6*7))"))
	cfg := gateway.Config{Approvals: gateway.ApprovalsChat, ApprovalTimeout: time.Minute}
	cfg.Thread.ApprovalPolicy = "untrusted"
	startStack(t, ctx, world, srv, cfg)
	room := privateRoom(srv, bob)
	joined(t, srv, room)
	srv.PostMentioning(room, alice, "bot: run the check", bot)
	var question string
	waitFor(t, srv, "the approval request", func() bool {
		for _, e := range srv.Sent(room, bot, "m.room.message") {
			if ch, ok := e.Content["io.gatewayd.choices"].(map[string]any); ok && ch["✅"] != nil {
				question = e.ID
				return true
			}
		}
		return false
	})
	srv.React(room, bob, question, "✅")
	waitFor(t, srv, "Bob's refusal", func() bool { return shownWith(srv, room, "or an admin can decide this") == 1 })
	srv.Post(room, bob, "!approve")
	waitFor(t, srv, "Bob's second refusal", func() bool { return shownWith(srv, room, "or an admin can decide this") == 2 })
	if shownWith(srv, room, "CHECKED-42") != 0 {
		t.Fatal("the command ran on Bob's answer")
	}
	srv.React(room, alice, question, "✅")
	waitFor(t, srv, "the command's output", func() bool { return shownWith(srv, room, "CHECKED-42") > 0 })
	// The gateway tells an approval's decision in a message of its own,
	// and edits the prompt to show it (through EditButtons, which drops
	// the choices).
	if shownWith(srv, room, "Approval a1: approved once") != 1 {
		t.Fatalf("the decision is not shown: %q", srv.Shown(room, bot))
	}
	if e := lastBotEventWith(srv, room, "✅ Approved once by"); e.ID != question {
		t.Fatalf("the prompt %s is not edited to its decision: %q", question, srv.Shown(room, bot))
	}
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestEndToEndFileBothWays: an m.image in a thread reaches the model as
// an image (downloaded with the token); the agent's send_file is uploaded
// and posted into that thread.
func TestEndToEndFileBothWays(t *testing.T) {
	processtest.SkipWhenShort(t, "runs the real app-server")
	ctx := e2eContext(t)
	srv, world := matrixtest.New(t), gatewaytest.NewWorld(t)
	pic := pngBytes(t)
	if err := os.WriteFile(filepath.Join(world.Work, "chart.png"), pic, 0o600); err != nil {
		t.Fatal(err)
	}
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), "send the chart") {
			return codextest.Reply{ToolCall: codextest.SendFile("call_chart", "chart.png", "the chart")}
		}
		return codextest.DefaultReply(req)
	})
	fstore := files.New(filepath.Join(world.Work, "state", "files"), files.Limits{}, nil)
	startStack(t, ctx, world, srv, gateway.Config{Files: fstore})
	room := privateRoom(srv)
	joined(t, srv, room)
	root := srv.Post(room, alice, "thread root")
	mxc := srv.Upload(pic, "image/png", "shot.png")
	srv.PostEvent(room, alice, "m.room.message", map[string]any{"msgtype": "m.image", "body": "what is in this PICTURE?",
		"filename": "shot.png", "url": mxc, "info": map[string]any{"mimetype": "image/png", "size": len(pic)},
		"m.relates_to": map[string]any{"rel_type": "m.thread", "event_id": root}})
	waitFor(t, srv, "the picture's answer", func() bool { return shownWith(srv, room, "PICTURE") > 0 })
	req, ok := world.Model.LastRequestWith("what is in this PICTURE?")
	if !ok || !slices.Contains(req.LastUserParts(), "input_image") {
		t.Fatalf("the model did not get the image (request found %v)", ok)
	}
	srv.PostInThread(room, alice, root, "please send the chart")
	var upload matrixtest.Event
	waitFor(t, srv, "the upload", func() bool {
		for _, e := range srv.Sent(room, bot, "m.room.message") {
			if e.Content["msgtype"] == "m.image" {
				upload = e
				return true
			}
		}
		return false
	})
	m, ok := srv.MediaOf(upload.Content["url"].(string))
	rel, _ := upload.Content["m.relates_to"].(map[string]any)
	if !ok || !bytes.Equal(m.Data, pic) || upload.Content["filename"] != "chart.png" || rel["event_id"] != root {
		t.Fatalf("upload %v: media found %v, %d bytes; want chart.png in the thread", upload.Content, ok, len(m.Data))
	}
}

// TestEncryptedRoomIsToldOnce: an invite into an encrypted room is
// joined and told once that the bot cannot read it; what is said there
// starts nothing, and a restart does not tell it again.
func TestEncryptedRoomIsToldOnce(t *testing.T) {
	processtest.SkipWhenShort(t, "runs the real app-server")
	ctx := e2eContext(t)
	srv, world := matrixtest.New(t), gatewaytest.NewWorld(t)
	d := startStack(t, ctx, world, srv, gateway.Config{})
	room := srv.CreateRoom(matrixtest.RoomOptions{Creator: alice, Encrypted: true, Invite: []string{bot}})
	lastRoom = room
	waitFor(t, srv, "the notice", func() bool { return shownWith(srv, room, "end-to-end encrypted") == 1 })
	srv.PostEvent(room, alice, "m.room.encrypted", map[string]any{"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "x"})
	d.Stop(t)
	startStack(t, ctx, world, srv, gateway.Config{})
	srv.Post(room, alice, "hello?")
	plain := privateRoom(srv)
	joined(t, srv, plain)
	srv.Post(plain, alice, "sentinel")
	waitFor(t, srv, "the sentinel's answer", func() bool { return shownWith(srv, plain, "ECHO: [alice]: sentinel") == 1 })
	if shown := srv.Shown(room, bot); len(shown) != 1 || len(world.Model.Requests()) != 1 {
		t.Fatalf("encrypted room shows %q and the model had %d requests; want one notice, one request (the sentinel)",
			shown, len(world.Model.Requests()))
	}
}

// TestEndToEndForkStartsAThread: !fork in a room starts a thread in that
// room with its own lane, carrying the room's context on its own Codex
// thread; the answer to a message in the new thread is posted in it.
func TestEndToEndForkStartsAThread(t *testing.T) {
	processtest.SkipWhenShort(t, "runs the real app-server")
	ctx := e2eContext(t)
	srv, world := matrixtest.New(t), gatewaytest.NewWorld(t)
	stack := startStack(t, ctx, world, srv, gateway.Config{})
	room := privateRoom(srv)
	joined(t, srv, room)
	srv.Post(room, alice, "remember KIWI")
	waitFor(t, srv, "the first answer", func() bool { return shownWith(srv, room, "]: remember KIWI") == 1 })
	stack.WaitIdle(t, 60*time.Second)
	srv.Post(room, alice, "!fork kiwi experiments")
	var root string
	waitFor(t, srv, "the thread root", func() bool {
		for _, e := range srv.Sent(room, bot, "m.room.message") {
			if body, _ := e.Content["body"].(string); strings.Contains(body, "🧵 kiwi experiments") {
				root = e.ID
				return true
			}
		}
		return false
	})
	waitFor(t, srv, "the fork's binding", func() bool { return shownWith(srv, room, `Forked into "kiwi experiments"`) == 1 })
	srv.PostInThread(room, alice, root, "which fruit in the fork?")
	waitFor(t, srv, "the fork's answer", func() bool { return shownWith(srv, room, "]: which fruit in the fork?") == 1 })
	answer := lastBotEventWith(srv, room, "]: which fruit in the fork?")
	if rel, _ := answer.Content["m.relates_to"].(map[string]any); rel["event_id"] != root {
		t.Fatalf("the fork's answer is not in the new thread: %v", answer.Content)
	}
	req, ok := world.Model.LastRequestWith("which fruit in the fork?")
	parent, okParent := world.Model.LastRequestWith("remember KIWI")
	if !ok || !okParent || !strings.Contains(req.InputText(), "KIWI") || req.ThreadID() == parent.ThreadID() {
		t.Fatalf("the fork's request: KIWI in context %v, threads %s / %s; shown %q", strings.Contains(req.InputText(), "KIWI"), req.ThreadID(), parent.ThreadID(), srv.Shown(room, bot))
	}
}
