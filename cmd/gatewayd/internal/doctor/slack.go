package doctor

import (
	"context"
	"errors"
	"fmt"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/platforms/slack"
)

// checkSlack checks both tokens and opens one Socket Mode connection, as
// the adapter will: the bot token alone cannot tell whether Socket Mode is
// on for the app or whether the websocket is reachable from here.
func (d *doctor) checkSlack(ctx context.Context, sl config.Slack) {
	if !sl.Enabled() {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	bot, err := slack.CheckBotToken(cctx, d.http, sl.APIURL, sl.BotToken)
	switch {
	case errors.Is(err, slack.ErrTokenRefused):
		d.fail("slack bot token refused: "+err.Error(),
			"set slack.bot_token (or slack.bot_token_file) to the Bot User OAuth Token (xoxb-…) of the app's OAuth & Permissions page")
	case err != nil:
		d.fail("slack: "+err.Error(), "check the network path to Slack's Web API (slack.api_url)")
	default:
		d.pass("slack bot token accepted (@%s in %s)", bot.User, bot.Team)
	}
	sctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	info, err := slack.CheckSocketInfo(sctx, d.http, sl.APIURL, sl.AppToken)
	switch {
	case errors.Is(err, slack.ErrTokenRefused):
		d.fail("slack app token refused: "+err.Error(),
			"set slack.app_token (or slack.app_token_file) to an App-Level Token (xapp-…) with connections:write (Basic Information, App-Level Tokens)")
	case err != nil:
		d.fail("slack Socket Mode: "+err.Error(),
			"turn Socket Mode on in the app's settings (deploy/slack/manifest.yaml does) and let this host reach Slack's websocket (wss, port 443)")
	default:
		d.pass("slack Socket Mode connected (app %s, %d connection(s) open)", info.AppID, info.Connections)
	}
	channels := "every channel the bot is in"
	if n := len(sl.AllowedChannels); n > 0 {
		channels = fmt.Sprintf("%d channel(s)", n)
	}
	d.checkAllowlist("slack", len(sl.AllowedUsers), fmt.Sprintf("%d user(s), %s", len(sl.AllowedUsers), channels),
		"set slack.allowed_users (member ids, profile, ⋮, Copy member ID)")
}
