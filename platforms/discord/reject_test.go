package discord

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/gatewayd/gatewayd/gateway"
)

func restError(t *testing.T, code int) error {
	t.Helper()
	req, err := http.NewRequest("GET", discordgo.EndpointGateway, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &discordgo.RESTError{Request: req, Response: &http.Response{StatusCode: code}}
}

func TestConnectRejected(t *testing.T) {
	a := &Adapter{cfg: Config{APIURL: "http://127.0.0.1:9/proxy/"}}
	tests := []struct {
		name    string
		err     error
		want    bool   // a configuration error
		wantMsg string // part of its message
	}{
		{"401", restError(t, 401), true, "http://127.0.0.1:9/proxy/api/v9/gateway: bot token rejected"},
		{"403", restError(t, 403), true, "http://127.0.0.1:9/proxy/api/v9/gateway: bot token rejected"},
		{"500 is worth a retry", restError(t, 500), false, ""},
		{"authentication failed", &websocket.CloseError{Code: 4004}, true, "4004"},
		{"disallowed intents", &websocket.CloseError{Code: 4014}, true, "Message Content intent"},
		{"normal close", &websocket.CloseError{Code: 1000}, false, ""},
		{"network", errors.New("dial tcp: connection refused"), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := a.connectRejected(tt.err)
			if got := errors.Is(err, gateway.ErrConfig); got != tt.want {
				t.Fatalf("connectRejected(%v) = %v; configuration error %v, want %v", tt.err, err, got, tt.want)
			}
			if tt.want && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("message %q lacks %q", err, tt.wantMsg)
			}
		})
	}
}

// Without an api_url the error names Discord's own URL.
func TestRequestURLWithoutOverride(t *testing.T) {
	u, _ := url.Parse(discordgo.EndpointGatewayBot)
	if got := (&Adapter{}).requestURL(u); got != discordgo.EndpointGatewayBot {
		t.Errorf("requestURL = %q, want %q", got, discordgo.EndpointGatewayBot)
	}
}
