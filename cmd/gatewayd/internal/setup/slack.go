package setup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/platforms/slack"
)

// Slack's step of `gatewayd init`: two tokens (the bot token for the Web
// API, the app-level token for Socket Mode), each checked with the call
// that uses it, and the member ids to allow.

const (
	envSlackBotToken = "GATEWAYD_SLACK_BOT_TOKEN"
	envSlackAppToken = "GATEWAYD_SLACK_APP_TOKEN"
)

type slackOptions struct {
	botTokenFile, appTokenFile string
	apiURL                     string
}

type slackState struct {
	botToken, appToken string
	users              []string
}

func (s slackState) enabled() bool { return s.botToken != "" && s.appToken != "" }

func (o *slackOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.botTokenFile, "slack-bot-token-file", "", "file holding the Slack bot token (xoxb-…)")
	fs.StringVar(&o.appTokenFile, "slack-app-token-file", "", "file holding the Slack app-level token (xapp-…, connections:write)")
	fs.StringVar(&o.apiURL, "slack-api-url", config.DefaultSlackAPIURL, "Slack Web API base URL")
}

// given reports whether a flag named Slack's tokens.
func (o slackOptions) given() bool { return o.botTokenFile != "" || o.appTokenFile != "" }

// checkURL normalises --slack-api-url as the adapter reads slack.api_url
// (slack-go appends the method to it, so it ends in a slash).
func (o *slackOptions) checkURL() error {
	if p, err := url.Parse(o.apiURL); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return cli.Usagef("init: %q is not an http(s) URL", o.apiURL)
	}
	if !strings.HasSuffix(o.apiURL, "/") {
		o.apiURL += "/"
	}
	return nil
}

// slackFiles reads the two token files; one without the other is a
// mistake, since Socket Mode needs both.
func (c *initCmd) slackFiles(st *initState) error {
	o := c.opts.slack
	if (o.botTokenFile == "") != (o.appTokenFile == "") {
		return cli.Usagef("init: --slack-bot-token-file and --slack-app-token-file go together (Slack's Socket Mode needs both tokens)")
	}
	if !o.given() {
		return nil
	}
	var err error
	if st.slack.botToken, err = readTokenFile("--slack-bot-token-file", o.botTokenFile); err != nil {
		return err
	}
	if st.slack.appToken, err = readTokenFile("--slack-app-token-file", o.appTokenFile); err != nil {
		return err
	}
	if msg := slackPrefixProblem(st.slack.botToken, "xoxb-"); msg != "" {
		return cli.Usagef("init: --slack-bot-token-file: %s %s", o.botTokenFile, msg)
	}
	if msg := slackPrefixProblem(st.slack.appToken, "xapp-"); msg != "" {
		return cli.Usagef("init: --slack-app-token-file: %s %s", o.appTokenFile, msg)
	}
	return nil
}

// slackPrefixProblem says what is wrong with a token that does not start
// with prefix; the message never quotes the token.
func slackPrefixProblem(tok, prefix string) string {
	if strings.HasPrefix(tok, prefix) {
		return ""
	}
	if prefix == "xoxb-" {
		return "does not hold a bot token (xoxb-…; the Bot User OAuth Token of OAuth & Permissions)"
	}
	return "does not hold an app-level token (xapp-…; Basic Information, App-Level Tokens)"
}

// slackTokens checks the tokens from files and, interactively, asks for
// them (an empty bot token skips Slack).
func (c *initCmd) slackTokens(ctx context.Context, st *initState, fromFiles bool) error {
	s := &st.slack
	if s.enabled() {
		err := c.checkSlackBotToken(ctx, s.botToken)
		if err == nil {
			err = c.checkSlackAppToken(ctx, s.appToken)
		}
		if err == nil {
			return nil
		}
		if !c.interactive {
			return err
		}
		fmt.Fprintf(c.std.Err, "%v\n", err)
		s.botToken, s.appToken = "", "" // ask for better ones below
	}
	if !c.interactive || (fromFiles && !c.opts.slack.given()) {
		return nil // the files chose the platforms
	}
	bot, err := c.askSlackToken("Slack bot token (xoxb-…, the app's OAuth & Permissions page; empty to skip Slack): ", "xoxb-",
		func(tok string) error { return c.checkSlackBotToken(ctx, tok) })
	if err != nil || bot == "" {
		return err
	}
	app, err := c.askSlackToken("Slack app-level token (xapp-…, Basic Information, App-Level Tokens, with connections:write): ", "xapp-",
		func(tok string) error { return c.checkSlackAppToken(ctx, tok) })
	if err != nil {
		return err
	}
	if app == "" {
		fmt.Fprintln(c.std.Err, "Slack needs both tokens (Socket Mode); skipping Slack.")
		return nil
	}
	s.botToken, s.appToken = bot, app
	return nil
}

// askSlackToken asks until check accepts a token; "" when skipped.
func (c *initCmd) askSlackToken(prompt, prefix string, check func(string) error) (string, error) {
	for {
		tok, err := c.askSecret(prompt)
		if err != nil || tok == "" {
			return "", err
		}
		if msg := tokenProblem(tok); msg != "" {
			fmt.Fprintf(c.std.Err, "slack: that %s\n", msg)
			continue
		}
		if msg := slackPrefixProblem(tok, prefix); msg != "" {
			fmt.Fprintf(c.std.Err, "slack: that %s\n", msg)
			continue
		}
		if err := check(tok); err != nil {
			fmt.Fprintf(c.std.Err, "%v\n", err)
			continue
		}
		return tok, nil
	}
}

func (c *initCmd) checkSlackBotToken(ctx context.Context, tok string) error {
	bot, err := slack.CheckBotToken(ctx, c.http, c.opts.slack.apiURL, tok)
	switch {
	case errors.Is(err, slack.ErrTokenRefused):
		return tokenError("slack", err)
	case err != nil:
		return fmt.Errorf("init: %w", err)
	}
	fmt.Fprintf(c.std.Out, "Slack: bot token accepted (@%s in %s)\n", bot.User, bot.Team)
	return nil
}

func (c *initCmd) checkSlackAppToken(ctx context.Context, tok string) error {
	err := slack.CheckAppToken(ctx, c.http, c.opts.slack.apiURL, tok)
	switch {
	case errors.Is(err, slack.ErrTokenRefused):
		return &cli.UsageError{Msg: fmt.Sprintf("init: slack rejected the app-level token: %v", err)}
	case err != nil:
		return fmt.Errorf("init: %w", err)
	}
	fmt.Fprintln(c.std.Out, "Slack: app-level token accepted (Socket Mode)")
	return nil
}

// slackUsers asks for the member ids to allow when no --allow-user named
// one; a Slack id given without Slack's tokens is a mistake.
func (c *initCmd) slackUsers(st *initState) error {
	s := &st.slack
	switch {
	case !s.enabled() && len(s.users) > 0:
		return cli.Usagef("init: --allow-user slack:… given but no Slack tokens")
	case !s.enabled() || len(s.users) > 0:
		return nil
	case !c.interactive:
		return cli.Usagef("init: --allow-user is required for Slack (member id, e.g. slack:U024BE7LH)")
	}
	ids, err := c.askIDsChecked("Slack member ids to allow (profile, ⋮, Copy member ID; separate with spaces): ", config.SlackID)
	if err != nil {
		return err
	}
	s.users = ids
	return nil
}

// slackYAML adds Slack's keys to the config init writes.
func (c *initCmd) slackYAML(values map[string]any, st *initState) {
	if !st.slack.enabled() {
		return
	}
	if c.opts.slack.apiURL != config.DefaultSlackAPIURL {
		values["slack.api_url"] = c.opts.slack.apiURL
	}
	values["slack.allowed_users"] = st.slack.users
}

// askIDsChecked is askIDs for ids that check accepts ("" = fine).
func (c *initCmd) askIDsChecked(prompt string, check func(string) string) ([]string, error) {
	for {
		line, err := c.ask(prompt)
		if err != nil {
			return nil, err
		}
		var ids []string
		bad := ""
		for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			if msg := check(f); msg != "" {
				bad = msg
				break
			}
			ids = appendUnique(ids, f)
		}
		switch {
		case bad != "":
			fmt.Fprintln(c.std.Err, bad)
		case len(ids) == 0:
			fmt.Fprintln(c.std.Err, "at least one user id is needed: gatewayd ignores everyone else")
		default:
			return ids, nil
		}
	}
}
