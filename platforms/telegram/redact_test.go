package telegram

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
)

// A send that fails in the network names the Bot API URL, which holds the
// token: the error the outbox logs and stores must not (go-telegram/bot
// redacts it; this guards an upgrade that stops doing so).
func TestNetworkErrorsDoNotCarryTheToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: every request fails to connect
	const token = "123456:SECRET-token-value"
	a, err := New(Config{Token: token, APIURL: closed, Cursor: newMemCursor(), PollTimeout: time.Second,
		Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Send(context.Background(), gateway.Outbound{ID: 1, Address: topic42, Text: "hello"})
	if err == nil {
		t.Fatal("a send to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("send error carries the token: %v", err)
	}
}
