package telegram_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// workViewModel runs `echo WORKVIEW` for a message asking to "run the
// tool", then answers the follow-up only once a status message in chat
// shows the exit code: otherwise, on a loaded machine, the end-of-turn
// summary can coalesce that edit away and the test would depend on timing.
func workViewModel(srv *telegramtest.Server, chat int64) func(codextest.Request) codextest.Reply {
	return func(req codextest.Request) codextest.Reply {
		_, followUp := req.ToolOutput()
		if !followUp && strings.Contains(req.LastUserText(), "run the tool") {
			return codextest.Reply{ToolCall: codextest.ExecCommand("call_wv", "echo WORKVIEW")}
		}
		if followUp {
			srv.Await(30*time.Second, func() bool { return statusShowed(srv.Messages(chat, 0), "exit 0") })
		}
		return codextest.DefaultReply(req)
	}
}

// statusShowed reports whether a silent message ever read text.
func statusShowed(msgs []telegramtest.Message, text string) bool {
	for _, m := range silentMessages(msgs) {
		for _, v := range append(m.Versions, m.Text) {
			if strings.Contains(v, text) {
				return true
			}
		}
	}
	return false
}

func silentMessages(msgs []telegramtest.Message) []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range msgs {
		if m.Silent {
			out = append(out, m)
		}
	}
	return out
}

func countContaining(msgs []telegramtest.Message, s string) int {
	n := 0
	for _, m := range msgs {
		if !m.Silent && strings.Contains(m.Text, s) {
			n++
		}
	}
	return n
}

// TestEndToEndWorkViewStatusMessage: with the real app-server and the fake
// Bot API, a turn that runs a command shows ONE silent status message that
// is edited (naming the command, then its exit code) and collapsed to the
// summary line, while the reply is a separate message. /verbose off
// suppresses it, and still does after the gateway restarts.
func TestEndToEndWorkViewStatusMessage(t *testing.T) {
	t.Parallel() // its own fake Bot API, store and codex home
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	world.Model.Respond(workViewModel(srv, dm.ID))
	start := func() *gatewaytest.Stack {
		return startStackWith(t, ctx, world, srv, gateway.Config{PreviewInterval: 100 * time.Millisecond})
	}
	stack := start()
	srv.Text(dm, alice, 0, "please run the tool", nil)
	srv.WaitFor(60*time.Second, "the reply and the collapsed status message", func() bool {
		msgs := srv.Messages(dm.ID, 0)
		s := silentMessages(msgs)
		return countContaining(msgs, "WORKVIEW") == 1 && len(s) > 0 && strings.HasPrefix(s[0].Text, "1 command, ")
	})
	msgs := srv.Messages(dm.ID, 0)
	status := silentMessages(msgs)
	if len(status) != 1 {
		t.Fatalf("%d silent messages, want one status message edited in place: %+v", len(status), status)
	}
	versions := strings.Join(status[0].Versions, "\n---\n")
	if status[0].Edits < 1 || !strings.Contains(versions, "$ echo WORKVIEW") || !strings.Contains(versions, "exit 0") {
		t.Errorf("status message versions:\n%s\nwant it edited, naming the command and its exit code", versions)
	}
	for _, m := range msgs {
		if !m.Silent && strings.HasPrefix(m.Text, "1 command") {
			t.Errorf("the summary went out as a loud message %+v", m)
		}
	}

	srv.Text(dm, alice, 0, "/verbose off", nil)
	srv.WaitFor(30*time.Second, "the /verbose answer", func() bool {
		return countContaining(srv.Messages(dm.ID, 0), "Work view: off") == 1
	})
	stack.Stop(t)
	start()
	srv.Text(dm, alice, 0, "please run the tool again", nil)
	srv.WaitFor(60*time.Second, "the second reply", func() bool {
		return countContaining(srv.Messages(dm.ID, 0), "WORKVIEW") == 2
	})
	if n := len(silentMessages(srv.Messages(dm.ID, 0))); n != 1 {
		t.Errorf("%d status messages after /verbose off and a restart, want still 1", n)
	}
}
