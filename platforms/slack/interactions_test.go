package slack

import (
	"fmt"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"go.uber.org/zap"

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

func TestDenialLogThrottledAndBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	d := newDenialLog(func() time.Time { return now })
	log := zap.NewNop()
	if !d.log(log, "U1", "C1") || d.log(log, "U1", "C1") {
		t.Fatal("a refusal is not logged once per denialRepeat")
	}
	for i := range 3 * maxDenials {
		d.log(log, fmt.Sprint("S", i), "C1")
	}
	if len(d.last) > maxDenials {
		t.Fatalf("%d refused senders remembered", len(d.last))
	}
	now = now.Add(denialRepeat)
	if !d.log(log, "U1", "C1") {
		t.Fatal("not logged again after denialRepeat")
	}
}
