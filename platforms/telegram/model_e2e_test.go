package telegram_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// Environment of TestModelCrashChild.
const (
	modelChildAPI   = "GATEWAYD_TG_MODEL_API"
	modelChildModel = "GATEWAYD_TG_MODEL_URL"
	modelChildHome  = "GATEWAYD_TG_MODEL_HOME"
	modelChildWork  = "GATEWAYD_TG_MODEL_WORK"
)

// TestModelCrashChild is the child process of
// TestEndToEndModelAndEffortSurviveKillNineAndNew: gatewayd with the real
// store, the real codex app-server and the Telegram adapter, against the
// parent's fake Bot API and the parent's fake model (so the parent sees
// every model request). It runs until it is killed.
func TestModelCrashChild(t *testing.T) {
	api := os.Getenv(modelChildAPI)
	if api == "" {
		t.Skip("helper process for TestEndToEndModelAndEffortSurviveKillNineAndNew")
	}
	work := os.Getenv(modelChildWork)
	world := &gatewaytest.World{Model: &codextest.Model{URL: os.Getenv(modelChildModel)}, Home: os.Getenv(modelChildHome),
		DB: filepath.Join(work, "gatewayd.db"), Work: work}
	world.Start(t, context.Background(), gateway.Config{}, childTelegram(t, api))
	fmt.Println("READY")
	select {} // killed here
}

// callbackData returns the callback_data of a message's inline buttons.
func callbackData(t *testing.T, m telegramtest.Message) []string {
	t.Helper()
	var markup struct {
		InlineKeyboard [][]struct {
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(m.Markup), &markup); err != nil {
		t.Fatalf("reply_markup %q: %v", m.Markup, err)
	}
	var out []string
	for _, row := range markup.InlineKeyboard {
		for _, b := range row {
			out = append(out, b.CallbackData)
		}
	}
	return out
}

// waitMessage waits for the bot's message in chat containing text.
func waitMessage(t *testing.T, srv *telegramtest.Server, chat int64, text string) telegramtest.Message {
	t.Helper()
	var found telegramtest.Message
	srv.WaitFor(60*time.Second, "a message containing "+text, func() bool {
		for _, m := range srv.Messages(chat, 0) {
			if strings.Contains(m.Text, text) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// ask sends text and waits for the model's echo of it; it returns the
// model request that answered it.
func askModel(t *testing.T, srv *telegramtest.Server, m *codextest.Model, chat models.Chat, from models.User, text string) codextest.Request {
	t.Helper()
	srv.Text(chat, from, 0, text, nil)
	waitMessage(t, srv, chat.ID, "ECHO: "+text)
	for _, req := range m.Requests() {
		if req.LastUserText() == text {
			return req
		}
	}
	t.Fatalf("no model request for %q", text)
	return codextest.Request{}
}

func wantModelAndEffort(t *testing.T, when string, req codextest.Request, model, effort string) {
	t.Helper()
	if got := req.Model(); got != model {
		t.Errorf("%s: the model request names model %q, want %q", when, got, model)
	}
	if got := req.ReasoningEffort(); got != effort {
		t.Errorf("%s: the model request has reasoning.effort %q, want %q", when, got, effort)
	}
}

// /model shows model/list's models as buttons; pressing one and sending
// /effort high makes the next model request carry both. They are the
// lane's: after a kill -9 of gatewayd (the thread is resumed by a new
// app-server) and after /new (a fresh thread) the requests still do.
func TestEndToEndModelAndEffortSurviveKillNineAndNew(t *testing.T) {
	processtest.SkipWhenShort(t, "kills a child gateway with SIGKILL")
	t.Parallel() // its own fake Bot API, store and codex home
	srv := telegramtest.New(t)
	fake := codextest.NewModel(t)
	home, work := t.TempDir(), t.TempDir()
	env := []string{modelChildAPI + "=" + srv.URL, modelChildModel + "=" + fake.URL,
		modelChildHome + "=" + home, modelChildWork + "=" + work}
	dm, alice := aliceDM(srv)

	first := gatewaytest.StartChild(t, "TestModelCrashChild", env...)
	first.Expect(t, "READY")
	before := askModel(t, srv, fake, dm, alice, "before any choice")
	if before.Model() != codextest.ModelName {
		t.Errorf("before /model: model %q, want the configured %q", before.Model(), codextest.ModelName)
	}
	srv.Text(dm, alice, 0, "/model", nil)
	list := waitMessage(t, srv, dm.ID, "Choose with /model NAME")
	buttons := callbackData(t, list)
	if len(buttons) == 0 || !strings.HasPrefix(buttons[0], "model:") {
		t.Fatalf("/model buttons %q, want model:<id> buttons", buttons)
	}
	chosen := strings.TrimPrefix(buttons[0], "model:")
	srv.Press(alice, list, buttons[0])
	waitMessage(t, srv, dm.ID, "Model: "+chosen+". The next turn uses it")
	srv.Text(dm, alice, 0, "/effort high", nil)
	waitMessage(t, srv, dm.ID, "Effort: high. The next turn uses it.")
	srv.Text(dm, alice, 0, "/effort lots", nil)
	waitMessage(t, srv, dm.ID, `does not support the effort "lots". Choose one of: `)

	chosenReq := askModel(t, srv, fake, dm, alice, "after the choice")
	wantModelAndEffort(t, "after /model and /effort", chosenReq, chosen, "high")

	first.Kill()
	second := gatewaytest.StartChild(t, "TestModelCrashChild", env...)
	second.Expect(t, "READY")
	resumed := askModel(t, srv, fake, dm, alice, "after the crash")
	if resumed.ThreadID() != chosenReq.ThreadID() || resumed.TurnMetadata("history_initialization") != "cold_resume" {
		t.Errorf("after kill -9: thread %s (%s), want %s resumed cold", resumed.ThreadID(),
			resumed.TurnMetadata("history_initialization"), chosenReq.ThreadID())
	}
	wantModelAndEffort(t, "after kill -9 and resume", resumed, chosen, "high")

	srv.Text(dm, alice, 0, "/new", nil)
	waitMessage(t, srv, dm.ID, "Started a new conversation")
	fresh := askModel(t, srv, fake, dm, alice, "in a fresh thread")
	if fresh.ThreadID() == resumed.ThreadID() {
		t.Errorf("after /new the request is on the old thread %s", fresh.ThreadID())
	}
	wantModelAndEffort(t, "after /new", fresh, chosen, "high")

	srv.Text(dm, alice, 0, "/model default", nil)
	waitMessage(t, srv, dm.ID, "Model: the default ("+codextest.ModelName+") from the next turn.")
	srv.Text(dm, alice, 0, "/effort default", nil)
	waitMessage(t, srv, dm.ID, "Effort: the model's default from the next turn.")
	back := askModel(t, srv, fake, dm, alice, "back to the defaults")
	if back.Model() != codextest.ModelName {
		t.Errorf("after /model default: model %q, want %q named again (the thread kept %q)", back.Model(), codextest.ModelName, chosen)
	}
	second.Kill()
}
