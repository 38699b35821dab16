package discord_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestEndToEndLargeFilesBothWays: attachments of 5 and 19 MiB come in from
// their CDN URLs, land on disk byte for byte and reach the model by path.
// Out, a 5 MiB file is uploaded byte for byte; a 19 MiB one is over the
// 10 MiB limit of a server without boosts and the lane is told so instead.
// The times are logged for the figures; nothing asserts on them.
func TestEndToEndLargeFilesBothWays(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		text := req.LastUserText()
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(text, "send back ") {
			name := text[strings.Index(text, "send back ")+len("send back "):]
			return codextest.Reply{ToolCall: codextest.SendFile("call_"+name, strings.Fields(name)[0], "")}
		}
		return codextest.DefaultReply(req)
	})
	startFilesStack(t, ctx, world, srv)
	said := func(marker string) func() bool {
		return func() bool {
			for _, m := range srv.BotMessages(channel) {
				if strings.Contains(m.Content, marker) {
					return true
				}
			}
			return false
		}
	}
	stateFiles := filepath.Join(world.Work, "state", "files")
	for i, mib := range []int{5, 19} {
		name := fmt.Sprintf("in-%dmib.bin", mib)
		data := gatewaytest.RandomBytes(mib<<20, byte(i+1))
		began := time.Now()
		srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, MentionBot: true, Content: fmt.Sprintf("IN%d please read", mib),
			Attachments: []discordtest.File{{Name: name, ContentType: "application/octet-stream", Data: data}}})
		if !srv.WaitFor(90*time.Second, said(fmt.Sprintf("IN%d", mib))) {
			t.Fatalf("no reply to %s", name)
		}
		t.Logf("figure: %d MiB attachment in (download, store, turn, reply): %v", mib, time.Since(began).Round(time.Millisecond))
		if got := gatewaytest.StoredFile(t, stateFiles, name); !bytes.Equal(got, data) {
			t.Errorf("%s on disk: %d bytes, not the %d sent", name, len(got), len(data))
		}

		out := fmt.Sprintf("out-%dmib.bin", mib)
		outData := gatewaytest.RandomBytes(mib<<20, byte(100+i))
		if err := os.WriteFile(filepath.Join(world.Work, out), outData, 0o600); err != nil {
			t.Fatal(err)
		}
		began = time.Now()
		srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, MentionBot: true, Content: "send back " + out})
		if mib > 10 {
			if !srv.WaitFor(90*time.Second, said(out+") could not be attached: it is 19 MiB, over this server's 10 MiB upload limit")) {
				t.Fatalf("no too-large notice for %s: %+v", out, srv.BotMessages(channel))
			}
			t.Logf("figure: %d MiB send_file out refused by the upload limit: %v", mib, time.Since(began).Round(time.Millisecond))
			continue
		}
		var up *discordtest.SentMessage
		if !srv.WaitFor(90*time.Second, func() bool {
			for _, m := range srv.Sent(channel) {
				if len(m.Files) == 1 && m.Files[0].Name == out {
					up = &m
					return true
				}
			}
			return false
		}) {
			t.Fatalf("no upload of %s", out)
		}
		t.Logf("figure: %d MiB send_file out (turn, snapshot, upload): %v", mib, time.Since(began).Round(time.Millisecond))
		if !bytes.Equal(up.Files[0].Data, outData) {
			t.Errorf("uploaded %d bytes of %s, want its %d", len(up.Files[0].Data), out, len(outData))
		}
	}
}
