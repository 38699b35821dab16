package telegram_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

// TestEndToEndLinksInTheLaneLeadNowhere: the agent (real codex,
// fake model) runs commands that replace its out/ directory with a link
// to a directory outside the lane, and, in another lane, swap the copy
// send_file made for a link to a secret before it is uploaded. The daemon
// neither writes through the first (the send_file after it is refused)
// nor uploads anything through either.
func TestEndToEndLinksInTheLaneLeadNowhere(t *testing.T) {
	t.Parallel() // its own fake Bot API, store and codex home
	for _, tt := range []struct {
		name, marker, wantReply string
	}{
		// first.txt's copy moved away with out/: its upload, through the
		// link, is refused too.
		{"linked out directory", gatewaytest.SwapOutMarker, "send_file refused"},
		{"copy swapped for a link", gatewaytest.SwapCopyMarker, "SWAPPED-COPY"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
			dm, alice := aliceDM(srv)
			fstore := worldFiles(world)
			attack := gatewaytest.NewLinkAttack(t, filepath.Dir(fstore.LaneDir("any")))
			attack.WriteFiles(t, world.Work)
			world.Model.Respond(attack.Model)
			startStackWith(t, ctx, world, srv, gateway.Config{Files: fstore})
			srv.Text(dm, alice, 0, "please "+tt.marker, nil)
			reply := ""
			srv.WaitFor(60*time.Second, "the reply after the attack", func() bool {
				for _, m := range srv.Messages(dm.ID, 0) {
					if attack.Finished(m.Text) {
						reply = m.Text
						return true
					}
				}
				return false
			})
			if !strings.Contains(reply, tt.wantReply) {
				t.Errorf("the agent's last tool output was %q, want %q", reply, tt.wantReply)
			}
			var data [][]byte
			for _, u := range srv.Uploads() {
				t.Errorf("uploaded %s through a link the agent made", u.FileName)
				data = append(data, u.Data)
			}
			attack.CheckVictim(t, data)
		})
	}
}
