package config

import (
	"fmt"
	"strings"
)

// Slack configures the Slack adapter (Socket Mode); enabled when both
// tokens are set: the bot token calls the Web API, the app-level token
// opens the Socket Mode connection, and neither works alone.
type Slack struct {
	BotToken        string // xoxb-…
	BotTokenFile    string
	AppToken        string // xapp-…, with connections:write
	AppTokenFile    string
	APIURL          string   // the Web API base, https://slack.com/api/ by default
	AllowedUsers    []string // member ids (U…, W…)
	AllowedChannels []string // channel ids; empty: every channel the bot is in
	Admins          []string // user ids who may decide any approval (codex.approvers)
}

// Enabled reports whether the adapter should run.
func (s Slack) Enabled() bool { return s.BotToken != "" && s.AppToken != "" }

// DefaultSlackAPIURL is slack.api_url's default.
const DefaultSlackAPIURL = "https://slack.com/api/"

// Slack's token prefixes: a bot token (OAuth, xoxb-) and an app-level token
// (xapp-). A user token (xoxp-) or a swapped pair is the usual mistake,
// and Slack's own answer to it ("not_allowed_token_type") names neither key.
const (
	slackBotTokenPrefix = "xoxb-"
	slackAppTokenPrefix = "xapp-"
)

// validateSlack checks what spans slack's keys; the messages never quote
// a token.
func (c *Config) validateSlack() []error {
	s := c.Slack
	var errs []error
	switch {
	case s.BotToken != "" && s.AppToken == "":
		errs = append(errs, errorf("slack.app_token",
			"required when slack.bot_token is set (Socket Mode needs both; or set slack.app_token_file or GATEWAYD_SLACK_APP_TOKEN)"))
	case s.AppToken != "" && s.BotToken == "":
		errs = append(errs, errorf("slack.bot_token",
			"required when slack.app_token is set (Socket Mode needs both; or set slack.bot_token_file or GATEWAYD_SLACK_BOT_TOKEN)"))
	}
	if s.BotToken != "" && !strings.HasPrefix(s.BotToken, slackBotTokenPrefix) {
		errs = append(errs, errorf("slack.bot_token", "not a bot token (xoxb-…): use the Bot User OAuth Token of the app's OAuth & Permissions page"))
	}
	if s.AppToken != "" && !strings.HasPrefix(s.AppToken, slackAppTokenPrefix) {
		errs = append(errs, errorf("slack.app_token", "not an app-level token (xapp-…): generate one with connections:write under Basic Information, App-Level Tokens"))
	}
	if s.Enabled() && len(s.AllowedUsers) == 0 {
		errs = append(errs, errorf("slack.allowed_users", "required when slack.bot_token and slack.app_token are set (member ids such as U024BE7LH)"))
	}
	for _, l := range []struct {
		key string
		ids []string
	}{
		{"slack.allowed_users", s.AllowedUsers},
		{"slack.allowed_channels", s.AllowedChannels},
		{"slack.admins", s.Admins},
	} {
		for _, id := range l.ids {
			if msg := SlackID(id); msg != "" {
				errs = append(errs, errorf(l.key, "%s", msg))
				break
			}
		}
	}
	return errs
}

// SlackID checks a Slack user or channel id ("U024BE7LH", "C012AB3CD"):
// upper-case letters and digits. It returns "" or what is wrong; init uses
// it for the ids it is given.
func SlackID(id string) string {
	if id == "" || strings.ContainsFunc(id, func(r rune) bool { return (r < 'A' || r > 'Z') && (r < '0' || r > '9') }) {
		return fmt.Sprintf("invalid id %q (Slack ids look like U024BE7LH)", id)
	}
	return ""
}
