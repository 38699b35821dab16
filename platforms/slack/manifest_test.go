package slack_test

import (
	"slices"
	"testing"

	"github.com/spf13/viper"
)

// deploy/slack/manifest.yaml is the app operators create: it must grant
// every scope the adapter's Web API calls need, subscribe to the message
// events it routes, and turn on what it relies on (Socket Mode, buttons,
// the slash command, DMs). An app made from it that lacked one would fail
// only in a real workspace, where our fake cannot look.
func TestManifestGivesWhatTheAdapterUses(t *testing.T) {
	v := viper.New()
	v.SetConfigFile("../../deploy/slack/manifest.yaml")
	if err := v.ReadInConfig(); err != nil {
		t.Fatalf("the manifest does not load: %v", err)
	}
	scopes := v.GetStringSlice("oauth_config.scopes.bot")
	// The scope each call of the adapter needs (Slack's method pages).
	for method, scope := range map[string]string{
		"chat.postMessage": "chat:write", "chat.update": "chat:write", "chat.delete": "chat:write", "chat.postEphemeral": "chat:write",
		"conversations.replies (public)": "channels:history", "conversations.replies (private)": "groups:history",
		"conversations.history (DM)": "im:history", "conversations.history (group DM)": "mpim:history",
		"users.info": "users:read", "files.info": "files:read", "file downloads": "files:read",
		"files.getUploadURLExternal": "files:write", "files.completeUploadExternal": "files:write",
		"slash commands": "commands",
	} {
		if !slices.Contains(scopes, scope) {
			t.Errorf("%s needs the bot scope %s; the manifest grants %q", method, scope, scopes)
		}
	}
	events := v.GetStringSlice("settings.event_subscriptions.bot_events")
	for _, e := range []string{"message.channels", "message.groups", "message.im", "message.mpim"} {
		if !slices.Contains(events, e) {
			t.Errorf("the adapter routes %s; the manifest subscribes to %q", e, events)
		}
	}
	for key, want := range map[string]bool{
		"settings.socket_mode_enabled":                     true,  // the adapter dials apps.connections.open
		"settings.interactivity.is_enabled":                true,  // block_actions: the buttons
		"settings.token_rotation_enabled":                  false, // the adapter never refreshes its bot token
		"features.app_home.messages_tab_enabled":           true,  // DMs are lanes
		"features.app_home.messages_tab_read_only_enabled": false,
	} {
		if got := v.GetBool(key); got != want || !v.IsSet(key) {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if v.GetString("features.bot_user.display_name") == "" {
		t.Error("no bot user: there would be no bot token")
	}
	var commands []struct {
		Command string `mapstructure:"command"`
	}
	if err := v.UnmarshalKey("features.slash_commands", &commands); err != nil || len(commands) != 1 || commands[0].Command != "/codex" {
		t.Errorf("slash commands %+v (%v), want the one /codex the docs name", commands, err)
	}
}
