package telegram_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestEndToEndSendFileSurvivesRestart: the agent (real codex, fake model)
// sends an image with send_file; Telegram refuses the upload until the
// daemon has restarted, and the next process sends it as a photo with
// the caption and the bytes as they were when the tool was called.
func TestEndToEndSendFileSurvivesRestart(t *testing.T) {
	t.Parallel() // its own fake Bot API, store and codex home
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	var pic bytes.Buffer
	if err := png.Encode(&pic, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(world.Work, "chart.png"), pic.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), "send the chart") {
			return codextest.Reply{ToolCall: codextest.SendFile("call_chart", "chart.png", "the chart")}
		}
		return codextest.DefaultReply(req)
	})
	fstore := worldFiles(world)
	startFiles := func() *gatewaytest.Stack {
		return startStackWith(t, ctx, world, srv, gateway.Config{Files: fstore})
	}
	// Every upload fails until the restart. The file row precedes the
	// reply, so the reply waits for it too.
	for range 50 {
		srv.Fail("sendphoto", telegramtest.Failure{Code: 500, Description: "Internal Server Error"})
	}
	d := startFiles()
	srv.Text(dm, alice, 0, "please send the chart", nil)
	srv.WaitFor(60*time.Second, "an upload attempt", func() bool { return srv.Calls("sendPhoto") > 0 })
	if n := len(srv.Uploads()); n != 0 {
		t.Fatalf("uploads before the restart = %d, want 0 (they fail)", n)
	}
	// Edited after the tool call: the snapshot is what is sent.
	if err := os.WriteFile(filepath.Join(world.Work, "chart.png"), []byte("edited"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.Stop(t)
	srv.ClearFailures("sendphoto")
	startFiles()
	srv.WaitFor(60*time.Second, "the photo", func() bool { return len(srv.Uploads()) > 0 })
	ups := srv.Uploads()
	if u := ups[0]; len(ups) != 1 || u.Method != "sendPhoto" || u.FileName != "chart.png" || u.Caption != "the chart" ||
		!bytes.Equal(u.Data, pic.Bytes()) {
		t.Fatalf("uploads = %+v, want one sendPhoto of the original chart.png with its caption", ups)
	}
	srv.WaitFor(30*time.Second, "the reply after the photo", func() bool {
		for _, m := range srv.Messages(dm.ID, 0) {
			if strings.Contains(m.Text, "TOOL OUTPUT") && strings.Contains(m.Text, "chart.png") {
				return true
			}
		}
		return false
	})
}
