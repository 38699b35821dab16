package discord_test

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

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// startFilesStack runs gatewayd (real store, codex and files store) with a
// Discord adapter talking to the fake Discord.
func startFilesStack(t *testing.T, ctx context.Context, w *gatewaytest.World, srv *discordtest.Server) *gatewaytest.Stack {
	t.Helper()
	fstore := files.New(filepath.Join(w.Work, "state", "files"), files.Limits{}, nil)
	return w.Start(t, ctx, gateway.Config{Files: fstore}, func(st *store.Store) []gateway.Platform {
		dc, err := discord.New(discord.Config{Token: discordtest.Token, APIURL: srv.URL(),
			AllowedUsers: []string{allowed}, Cursor: st, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatalf("discord.New: %v", err)
		}
		return []gateway.Platform{dc}
	})
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestEndToEndImageAttachmentReachesModel: a message with an image
// attachment (fake Discord) reaches the fake model through the real codex
// app-server as an input_image part, with the message text as user text.
func TestEndToEndImageAttachmentReachesModel(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	startFilesStack(t, ctx, world, srv)
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, MentionBot: true, Content: "what is in this PICTURE?",
		Attachments: []discordtest.File{{Name: "shot.png", ContentType: "image/png", Data: pngBytes(t)}}})
	if !srv.WaitFor(60*time.Second, func() bool {
		for _, m := range srv.BotMessages(channel) {
			if strings.Contains(m.Content, "PICTURE") {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no reply: %+v", srv.BotMessages(channel))
	}
	req, ok := world.Model.LastRequestWith("what is in this PICTURE?")
	if !ok {
		t.Fatalf("no model request carries the message text; requests: %d", len(world.Model.Requests()))
	}
	if parts := req.LastUserParts(); !slices.Contains(parts, "input_image") {
		t.Errorf("last user message parts = %v, want an input_image", parts)
	}
	if n := len(srv.Downloads()); n != 1 {
		t.Errorf("%d downloads of the attachment, want 1", n)
	}
}

// TestEndToEndSendFileUploadsAttachment: the agent (real codex, fake model)
// calls send_file for a file in its working directory; the fake Discord
// receives one multipart message with the file's bytes and the caption,
// and the turn's reply follows.
func TestEndToEndSendFileUploadsAttachment(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
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
	startFilesStack(t, ctx, world, srv)
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, MentionBot: true, Content: "please send the chart"})
	uploads := func() []discordtest.SentMessage {
		var out []discordtest.SentMessage
		for _, m := range srv.Sent(channel) { // BotMessages does not carry files
			if len(m.Files) > 0 {
				out = append(out, m)
			}
		}
		return out
	}
	if !srv.WaitFor(60*time.Second, func() bool {
		for _, m := range srv.BotMessages(channel) {
			if strings.Contains(m.Content, "TOOL OUTPUT") && strings.Contains(m.Content, "chart.png") {
				return len(uploads()) > 0
			}
		}
		return false
	}) {
		t.Fatalf("no upload and reply after the tool call: %+v", srv.Sent(channel))
	}
	ups := uploads()
	if len(ups) != 1 || len(ups[0].Files) != 1 {
		t.Fatalf("uploads = %+v, want one message with one file", ups)
	}
	if f := ups[0].Files[0]; f.Name != "chart.png" || !bytes.Equal(f.Data, pic) {
		t.Errorf("attachment = %s (%d bytes), want chart.png with its %d bytes", f.Name, len(f.Data), len(pic))
	}
	if ups[0].Content != "the chart" {
		t.Errorf("upload content = %q, want the caption", ups[0].Content)
	}
	if sent := srv.Sent(channel); sent[0].ID != ups[0].ID {
		t.Errorf("sent = %+v, want the upload before the reply", sent)
	}
}

// TestEndToEndSendFileBeforeStreamedReply: when the reply after send_file
// streams slowly enough for a preview, the file still reaches the chat
// before the reply's text: the preview stops once the file is sent, and the
// reply is a new message after the file (gateway/preview: Hold).
func TestEndToEndSendFileBeforeStreamedReply(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	if err := os.WriteFile(filepath.Join(world.Work, "chart.png"), pngBytes(t), 0o600); err != nil {
		t.Fatal(err)
	}
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), "send the chart") {
			return codextest.Reply{ToolCall: codextest.SendFile("call_chart", "chart.png", "the chart")}
		}
		r := codextest.DefaultReply(req)
		r.Chunks, r.ChunkDelay = 4, 600*time.Millisecond // slower than the 1s preview interval
		return r
	})
	startFilesStack(t, ctx, world, srv)
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, MentionBot: true, Content: "please send the chart"})
	if !srv.WaitFor(60*time.Second, func() bool {
		for _, m := range srv.BotMessages(channel) {
			if strings.Contains(m.Content, "TOOL OUTPUT") && strings.Contains(m.Content, "your reply.") {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no full reply: %+v", srv.BotMessages(channel))
	}
	sent := srv.Sent(channel)
	if len(sent) == 0 || len(sent[0].Files) != 1 {
		t.Fatalf("sent = %+v, want the upload first", sent)
	}
}
