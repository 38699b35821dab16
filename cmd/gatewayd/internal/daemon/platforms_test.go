package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
)

func TestChatPlatformsFollowTheTokens(t *testing.T) {
	st := openTestStore(t)
	tests := []struct {
		name string
		cfg  config.Config
		want []string
	}{
		{"none", config.Config{}, nil},
		{"telegram", config.Config{Telegram: config.Telegram{Token: "1:t", AllowedUsers: []string{"5"}}}, []string{"telegram"}},
		{"both", config.Config{
			Telegram: config.Telegram{Token: "1:t", AllowedChats: []string{"-100"}},
			Discord:  config.Discord{Token: "d", AllowedRoles: []string{"r"}},
		}, []string{"telegram", "discord"}},
		{"slack", config.Config{Slack: config.Slack{BotToken: "xoxb-1", AppToken: "xapp-1", AllowedUsers: []string{"U1"}}}, []string{"slack"}},
		{"slack without its app token", config.Config{Slack: config.Slack{BotToken: "xoxb-1", AllowedUsers: []string{"U1"}}}, nil},
		{"matrix", config.Config{Matrix: config.Matrix{Homeserver: "http://127.0.0.1:1", AccessToken: "syt_x",
			AllowedUsers: []string{"@a:example.org"}}}, []string{"matrix"}},
		{"all four", config.Config{
			Telegram: config.Telegram{Token: "1:t", AllowedUsers: []string{"5"}},
			Discord:  config.Discord{Token: "d", AllowedUsers: []string{"6"}},
			Slack:    config.Slack{BotToken: "xoxb-1", AppToken: "xapp-1", AllowedUsers: []string{"U1"}},
			Matrix:   config.Matrix{Homeserver: "http://127.0.0.1:1", AccessToken: "syt_x", AllowedUsers: []string{"@a:example.org"}},
		}, []string{"telegram", "discord", "slack", "matrix"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plats, err := chatPlatforms(&tc.cfg, st, nil, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range plats {
				names = append(names, p.Name())
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("platforms %q, want %q", names, tc.want)
			}
		})
	}
}

// fakeTelegram records SetAllowlist like the real adapter's.
type fakeTelegram struct {
	gateway.Platform
	users, chats []int64
}

func (f *fakeTelegram) Name() string                      { return "telegram" }
func (f *fakeTelegram) SetAllowlist(users, chats []int64) { f.users, f.chats = users, chats }

type fakeDiscord struct {
	gateway.Platform
	users, roles []string
}

func (f *fakeDiscord) Name() string                       { return "discord" }
func (f *fakeDiscord) SetAllowlist(users, roles []string) { f.users, f.roles = users, roles }

// fakePlace records SetAllowlist of an adapter whose lists are strings of
// users and places (Slack's channels, Matrix's rooms): the signature
// Discord's has too, so only the name tells them apart.
type fakePlace struct {
	gateway.Platform
	name          string
	users, places []string
}

func (f *fakePlace) Name() string                        { return f.name }
func (f *fakePlace) SetAllowlist(users, places []string) { f.users, f.places = users, places }

func TestReloadAllowlists(t *testing.T) {
	dir := cleanEnv(t)
	file := filepath.Join(dir, "gw.yaml")
	body := "telegram:\n  allowed_users: [1, 2]\n  allowed_chats: [-100]\ndiscord:\n  allowed_users: [u]\n  allowed_roles: [r]\n" +
		"slack:\n  allowed_users: [U1]\n  allowed_channels: [C1]\n" +
		"matrix:\n  allowed_users: [\"@a:example.org\"]\n  allowed_rooms: [\"!r:example.org\"]\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, dc, sl, mx := &fakeTelegram{}, &fakeDiscord{}, &fakePlace{name: "slack"}, &fakePlace{name: "matrix"}
	reloadAllowlists(config.Options{File: file, Env: os.Environ()}, []gateway.Platform{tg, dc, sl, mx}, zap.NewNop())
	if !reflect.DeepEqual(tg.users, []int64{1, 2}) || !reflect.DeepEqual(tg.chats, []int64{-100}) {
		t.Errorf("telegram allowlist users=%v chats=%v", tg.users, tg.chats)
	}
	if !reflect.DeepEqual(dc.users, []string{"u"}) || !reflect.DeepEqual(dc.roles, []string{"r"}) {
		t.Errorf("discord allowlist users=%v roles=%v", dc.users, dc.roles)
	}
	if !reflect.DeepEqual(sl.users, []string{"U1"}) || !reflect.DeepEqual(sl.places, []string{"C1"}) {
		t.Errorf("slack allowlist users=%v channels=%v", sl.users, sl.places)
	}
	if !reflect.DeepEqual(mx.users, []string{"@a:example.org"}) || !reflect.DeepEqual(mx.places, []string{"!r:example.org"}) {
		t.Errorf("matrix allowlist users=%v rooms=%v", mx.users, mx.places)
	}

	// A broken file changes nothing.
	if err := os.WriteFile(file, []byte("telegram:\n  allowed_users: [x]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reloadAllowlists(config.Options{File: file, Env: os.Environ()}, []gateway.Platform{tg}, zap.NewNop())
	if !reflect.DeepEqual(tg.users, []int64{1, 2}) {
		t.Errorf("a bad reload changed the allowlist to %v", tg.users)
	}
}

// Cluster mode refuses Slack and Matrix at start (and in check-config and
// doctor, which run CheckRuntime), naming the key; on SQLite they run.
func TestSingleNodePlatforms(t *testing.T) {
	slack := config.Slack{BotToken: "xoxb-1", AppToken: "xapp-1", AllowedUsers: []string{"U1"}}
	mx := config.Matrix{Homeserver: "http://127.0.0.1:1", AccessToken: "syt_x", AllowedUsers: []string{"@a:example.org"}}
	postgres := config.Store{Driver: "postgres", DSN: "postgres://127.0.0.1/gw"}
	tests := []struct {
		name string
		cfg  config.Config
		want string // the key named; "" = accepted
	}{
		{"slack on sqlite", config.Config{Slack: slack, Store: config.Store{Driver: "sqlite"}}, ""},
		{"matrix on sqlite", config.Config{Matrix: mx, Store: config.Store{Driver: "sqlite"}}, ""},
		{"telegram in cluster mode", config.Config{Telegram: config.Telegram{Token: "1:t"}, Store: postgres}, ""},
		{"slack in cluster mode", config.Config{Slack: slack, Store: postgres}, "slack.bot_token"},
		{"matrix in cluster mode", config.Config{Matrix: mx, Store: postgres}, "matrix.access_token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := singleNodePlatforms(&tc.cfg)
			var ce *config.Error
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (!errors.As(err, &ce) || ce.Key != tc.want || !strings.Contains(err.Error(), "cluster mode does not run")):
				t.Errorf("got %v, want a config error naming %s", err, tc.want)
			}
		})
	}
}
