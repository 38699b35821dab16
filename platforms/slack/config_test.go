package slack

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
)

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantKey string // "" = valid
	}{
		{"valid", Config{BotToken: "xoxb-1", AppToken: "xapp-1"}, ""},
		{"no bot token", Config{AppToken: "xapp-1"}, "slack.bot_token"},
		{"user token as bot token", Config{BotToken: "xoxp-1", AppToken: "xapp-1"}, "slack.bot_token"},
		{"no app token", Config{BotToken: "xoxb-1"}, "slack.app_token"},
		{"bot token as app token", Config{BotToken: "xoxb-1", AppToken: "xoxb-2"}, "slack.app_token"},
		{"relative url", Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "/api"}, "slack.api_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.cfg)
			if tt.wantKey == "" {
				if err != nil || a == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if !errors.Is(err, gateway.ErrConfig) || !strings.Contains(err.Error(), tt.wantKey) {
				t.Fatalf("New: %v, want an ErrConfig naming %s", err, tt.wantKey)
			}
			if strings.Contains(err.Error(), "xoxb-2") || strings.Contains(err.Error(), "xoxp-1") {
				t.Fatalf("error shows the token: %v", err)
			}
		})
	}
}

func TestAPIURLGetsTrailingSlash(t *testing.T) {
	a, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1", APIURL: "http://127.0.0.1:1/api"})
	if err != nil {
		t.Fatal(err)
	}
	if a.cfg.APIURL != "http://127.0.0.1:1/api/" {
		t.Fatalf("APIURL = %q", a.cfg.APIURL)
	}
}
