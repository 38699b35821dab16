package telegram_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// Environment of TestSendFileCrashChild (see partsChild* for the pattern).
const (
	sendFileChildAPI  = "GATEWAYD_TG_SENDFILE_API"
	sendFileChildHome = "GATEWAYD_TG_SENDFILE_HOME"
	sendFileChildWork = "GATEWAYD_TG_SENDFILE_WORK"
)

const askForChart = "please send the chart"

// TestSendFileCrashChild is the child process of
// TestKillNineBeforeSendFileDeliverySendsPhotoOnce: gatewayd with the real
// store, the real codex app-server (fake model that calls send_file), a
// files store and the Telegram adapter, against the parent's fake Bot API.
// It runs until it is killed.
func TestSendFileCrashChild(t *testing.T) {
	api := os.Getenv(sendFileChildAPI)
	if api == "" {
		t.Skip("helper process for TestKillNineBeforeSendFileDeliverySendsPhotoOnce")
	}
	work := os.Getenv(sendFileChildWork)
	world := &gatewaytest.World{Model: codextest.NewModel(t), Home: os.Getenv(sendFileChildHome),
		DB: filepath.Join(work, "gatewayd.db"), Work: work}
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), askForChart) {
			return codextest.Reply{ToolCall: codextest.SendFile("call_chart", "chart.png", "the chart")}
		}
		return codextest.DefaultReply(req)
	})
	fstore := files.New(filepath.Join(work, "state", "files"), files.Limits{}, nil)
	world.Start(t, context.Background(), gateway.Config{Files: fstore}, childTelegram(t, api))
	fmt.Println("READY")
	select {} // killed here
}

// A kill -9 after the agent's send_file call and before Telegram got the
// photo: the parent holds the first sendPhoto at the fake Bot API, kills
// the child there and drops the held request (it never reached Telegram).
// The next process sends the photo, with its caption and the bytes as they
// were at the tool call, exactly once, and the reply once. (The reply may
// show before the photo when a streamed preview went out: see
// TestEndToEndSendFileBeforeStreamedReply.)
func TestKillNineBeforeSendFileDeliverySendsPhotoOnce(t *testing.T) {
	processtest.SkipWhenShort(t, "kills a child gateway with SIGKILL")
	t.Parallel() // its own fake Bot API, store and codex home
	srv := telegramtest.New(t)
	home, work := t.TempDir(), t.TempDir()
	env := []string{sendFileChildAPI + "=" + srv.URL, sendFileChildHome + "=" + home, sendFileChildWork + "=" + work}
	dm, alice := aliceDM(srv)
	var pic bytes.Buffer
	if err := png.Encode(&pic, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "chart.png"), pic.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	held := srv.HoldText("sendPhoto", "")
	first := gatewaytest.StartChild(t, "TestSendFileCrashChild", env...)
	first.Expect(t, "READY")
	srv.Text(dm, alice, 0, askForChart, nil)
	select {
	case <-held.Arrived():
	case <-time.After(90 * time.Second):
		t.Fatal("the photo upload never reached the fake Bot API")
	}
	first.Kill()
	held.Drop()
	if n := len(srv.Uploads()); n != 0 {
		t.Fatalf("uploads before the restart = %d, want 0 (the only one was dropped)", n)
	}
	// Edited after the tool call: the snapshot is what is sent.
	if err := os.WriteFile(filepath.Join(work, "chart.png"), []byte("edited"), 0o600); err != nil {
		t.Fatal(err)
	}

	second := gatewaytest.StartChild(t, "TestSendFileCrashChild", env...)
	second.Expect(t, "READY")
	// The reply may already show (a streamed preview of the first
	// process): wait for the photo too.
	srv.WaitFor(60*time.Second, "the photo and the reply", func() bool {
		for _, m := range srv.Messages(dm.ID, 0) {
			if strings.Contains(m.Text, "TOOL OUTPUT") && strings.Contains(m.Text, "chart.png") {
				return len(srv.Uploads()) > 0
			}
		}
		return false
	})
	// A later message, answered, proves the lane is idle: nothing more of
	// the first turn is on its way.
	srv.Text(dm, alice, 0, "thanks, DONE?", nil)
	srv.WaitFor(60*time.Second, "the reply to the follow-up", func() bool {
		for _, m := range srv.Messages(dm.ID, 0) {
			if strings.Contains(m.Text, "DONE?") {
				return true
			}
		}
		return false
	})
	second.Kill()
	ups := srv.Uploads()
	if len(ups) != 1 {
		t.Fatalf("uploads = %+v, want exactly one photo", ups)
	}
	if u := ups[0]; u.Method != "sendPhoto" || u.FileName != "chart.png" || u.Caption != "the chart" || !bytes.Equal(u.Data, pic.Bytes()) {
		t.Fatalf("upload = %s %s %q (%d bytes), want sendPhoto of the original chart.png with its caption",
			u.Method, u.FileName, u.Caption, len(u.Data))
	}
	replies := 0
	for _, m := range srv.Messages(dm.ID, 0) {
		if strings.Contains(m.Text, "TOOL OUTPUT") && strings.Contains(m.Text, "chart.png") {
			replies++
		}
	}
	if replies != 1 {
		t.Errorf("%d replies after the photo, want 1: %+v", replies, srv.Messages(dm.ID, 0))
	}
}
