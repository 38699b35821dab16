package telegram_test

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

func jpegBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, 4, 4)), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestEndToEndPhotoWithCaptionReachesModel: a photo with a caption sent to
// the bot (fake Bot API) reaches the fake model through the real codex
// app-server as an input_image part, with the caption as the user text.
func TestEndToEndPhotoWithCaptionReachesModel(t *testing.T) {
	t.Parallel() // its own fake Bot API, store and codex home
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	fstore := worldFiles(world)
	startStackWith(t, ctx, world, srv, gateway.Config{Files: fstore})
	pic := jpegBytes(t)
	id := srv.AddFile("p.jpg", pic)
	srv.Queue(&models.Update{Message: &models.Message{ID: 5, From: &alice, Chat: dm, Date: int(time.Now().Unix()),
		Caption: "what is in this PICTURE?", Photo: []models.PhotoSize{{FileID: id, Width: 4, Height: 4, FileSize: len(pic)}}}})
	srv.WaitFor(60*time.Second, "the reply", func() bool {
		for _, m := range srv.Messages(dm.ID, 0) {
			if strings.Contains(m.Text, "PICTURE") {
				return true
			}
		}
		return false
	})
	req, ok := world.Model.LastRequestWith("what is in this PICTURE?")
	if !ok {
		t.Fatalf("no model request carries the caption; requests: %d", len(world.Model.Requests()))
	}
	if parts := req.LastUserParts(); !slices.Contains(parts, "input_image") {
		t.Errorf("last user message parts = %v, want an input_image", parts)
	}
	if n := len(srv.Downloads()); n != 1 {
		t.Errorf("%d downloads of the photo, want 1", n)
	}
}

// TestEndToEndSendFileBeforeStreamedReply: when the reply after send_file
// streams slowly enough for a preview, the photo still reaches the chat
// before the reply's text: the preview stops once the file is sent, and the
// reply is a new message after the file (gateway/preview: Hold).
func TestEndToEndSendFileBeforeStreamedReply(t *testing.T) {
	t.Parallel() // its own fake Bot API, store and codex home
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	if err := os.WriteFile(filepath.Join(world.Work, "chart.jpg"), jpegBytes(t), 0o600); err != nil {
		t.Fatal(err)
	}
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), "send the chart") {
			return codextest.Reply{ToolCall: codextest.SendFile("call_chart", "chart.jpg", "the chart")}
		}
		r := codextest.DefaultReply(req)
		r.Chunks, r.ChunkDelay = 4, 600*time.Millisecond // slower than the 1s preview interval
		return r
	})
	fstore := worldFiles(world)
	startStackWith(t, ctx, world, srv, gateway.Config{Files: fstore})
	srv.Text(dm, alice, 0, "please send the chart", nil)
	srv.WaitFor(60*time.Second, "the photo and the full reply", func() bool {
		for _, m := range srv.Messages(dm.ID, 0) {
			if strings.Contains(m.Text, "your reply.") {
				return len(srv.Uploads()) > 0
			}
		}
		return false
	})
	photo := srv.Uploads()[0].ID
	for _, m := range srv.Messages(dm.ID, 0) {
		if strings.Contains(m.Text, "TOOL OUTPUT") && m.ID < photo {
			t.Errorf("the reply (message %d) precedes the photo (message %d)", m.ID, photo)
		}
	}
}
