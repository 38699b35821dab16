package slack

import (
	"testing"

	"github.com/slack-go/slack"

	"github.com/gatewayd/gatewayd/gateway"
)

func TestPressedLane(t *testing.T) {
	press := func(channel, threadTS, msgTS string) slack.InteractionCallback {
		var cb slack.InteractionCallback
		cb.Container.ChannelID, cb.Container.ThreadTs, cb.Container.MessageTs = channel, threadTS, msgTS
		return cb
	}
	tests := []struct {
		name string
		cb   slack.InteractionCallback
		want gateway.Address
	}{
		{"dm", press("D1", "", "2.000000"), dmAddress("D1")},
		{"dm message with a thread", press("D1", "1.000000", "2.000000"), dmAddress("D1")},
		{"channel thread", press("C1", "1.000000", "2.000000"), threadAddress("C1", "1.000000")},
		{"channel top level", press("C1", "", "2.000000"), threadAddress("C1", "2.000000")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pressedLane(tt.cb); got != tt.want {
				t.Fatalf("pressedLane = %+v, want %+v", got, tt.want)
			}
		})
	}
}
