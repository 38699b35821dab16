package discord_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

// TestEndToEndLinksInTheLaneLeadNowhere is Telegram's test of
// the same name on Discord: the agent (real codex, fake model) replaces
// its out/ directory with a link out of the lane, or the copy send_file
// made with a link to a secret before its upload; the daemon neither
// writes through the first nor uploads anything through either.
func TestEndToEndLinksInTheLaneLeadNowhere(t *testing.T) {
	for _, tt := range []struct {
		name, marker, wantReply string
	}{
		{"linked out directory", gatewaytest.SwapOutMarker, "send_file refused"},
		{"copy swapped for a link", gatewaytest.SwapCopyMarker, "SWAPPED-COPY"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
			root := filepath.Join(world.Work, "state", "files")
			attack := gatewaytest.NewLinkAttack(t, root)
			attack.WriteFiles(t, world.Work)
			world.Model.Respond(attack.Model)
			startStackWith(t, ctx, world, srv, gateway.Config{Files: files.New(root, files.Limits{}, nil)})
			srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, MentionBot: true, Content: "please " + tt.marker})
			reply := ""
			if !srv.WaitFor(60*time.Second, func() bool {
				for _, m := range srv.BotMessages(channel) {
					if attack.Finished(m.Content) {
						reply = m.Content
						return true
					}
				}
				return false
			}) {
				t.Fatalf("no reply after the attack: %+v", srv.Sent(channel))
			}
			if !strings.Contains(reply, tt.wantReply) {
				t.Errorf("the agent's last tool output was %q, want %q", reply, tt.wantReply)
			}
			var data [][]byte
			for _, m := range srv.Sent(channel) {
				for _, f := range m.Files {
					t.Errorf("uploaded %s through a link the agent made", f.Name)
					data = append(data, f.Data)
				}
			}
			attack.CheckVictim(t, data)
		})
	}
}
