package slack_test

import (
	"bytes"
	"context"
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
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func filesConfig(w *gatewaytest.World) gateway.Config {
	return gateway.Config{Files: files.New(filepath.Join(w.Work, "state", "files"), files.Limits{}, nil)}
}

// TestEndToEndFilesBothWays: an image shared with a mention reaches the
// model as an input_image (downloaded once, with the bot token); the
// agent's send_file is uploaded into the same thread through the external
// upload flow, with its caption, before the reply.
func TestEndToEndFilesBothWays(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	fake, world := newFake(t), gatewaytest.NewWorld(t)
	chart := pngBytes(t)
	if err := os.WriteFile(filepath.Join(world.Work, "chart.png"), chart, 0o600); err != nil {
		t.Fatal(err)
	}
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), "send the chart") {
			return codextest.Reply{ToolCall: codextest.SendFile("call_chart", "chart.png", "the chart")}
		}
		return codextest.DefaultReply(req)
	})
	startStack(t, ctx, world, fake, filesConfig(world))
	shot := fake.AddFile("shot.png", "image/png", pngBytes(t))
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "what is in this PICTURE?", MentionBot: true,
		Files: []slacktest.File{shot}})
	waitReply(t, fake, channel, "PICTURE")
	req, ok := world.Model.LastRequestWith("what is in this PICTURE?")
	if !ok {
		t.Fatal("no model request carries the message text")
	}
	if parts := req.LastUserParts(); !slices.Contains(parts, "input_image") {
		t.Errorf("last user message parts = %v, want an input_image", parts)
	}
	if n := fake.Downloads(); n != 1 {
		t.Errorf("%d downloads, want 1", n)
	}

	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "please send the chart", ThreadTS: root})
	if !fake.WaitFor(60*time.Second, func() bool {
		return len(fake.Uploads()) == 1 && fake.Uploads()[0].Completed && threadHas(fake, root, "TOOL OUTPUT")()
	}) {
		t.Fatalf("no upload and reply: uploads %+v", fake.Uploads())
	}
	up := fake.Uploads()[0]
	if up.Name != "chart.png" || !bytes.Equal(up.Data, chart) || up.Channel != channel || up.ThreadTS != root ||
		up.Comment != "the chart" {
		t.Errorf("upload = %s (%d bytes) in %s/%s with %q", up.Name, len(up.Data), up.Channel, up.ThreadTS, up.Comment)
	}
}
