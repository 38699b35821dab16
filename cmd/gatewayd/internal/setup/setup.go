// Package setup is `gatewayd init`: it writes a working configuration
// (through config.WriteYAML) and the environment file with the bot
// tokens, checking each token with its platform's CheckToken and each
// project with config's rules, then runs the doctor on the result.
package setup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/doctor"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/go-telegram/bot/models"
)

// `gatewayd init` writes a working configuration: the YAML (no secrets,
// mode 0640) and the environment file with the bot tokens (mode 0600, or
// 0640 group gatewayd when run as root and that group exists). Tokens come
// from files or a prompt without echo, never from the command line (ps
// would show them), and are never printed.

const (
	initDiscordAPIURL = "https://discord.com"
	// initWaitForMessage bounds how long init waits for a message to the
	// Telegram bot to learn the sender's id.
	initWaitForMessage = 60 * time.Second
	initHTTPTimeout    = 30 * time.Second
	envTelegramToken   = "GATEWAYD_TELEGRAM_TOKEN"
	envDiscordToken    = "GATEWAYD_DISCORD_TOKEN"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type initOptions struct {
	config, envFile    string
	tgTokenFile        string
	dcTokenFile        string
	allow, projects    listFlag
	yes, force         bool
	tgAPIURL, dcAPIURL string
	slack              slackOptions  // slack.go
	matrix             matrixOptions // matrix.go
}

// initState is what init collects before it writes.
type initState struct {
	tgToken, dcToken string
	tgUsers, dcUsers []string
	slack            slackState  // slack.go
	matrix           matrixState // matrix.go
	projects         map[string]string
}

type initCmd struct {
	opts        initOptions
	std         cli.Stdio
	version     string // gatewayd's, for the doctor's app-server client
	in          *bufio.Reader
	interactive bool
	http        *http.Client
	tgBot       string // the bot's @username, once getMe answered
	// newCode makes the one-time code the operator sends the bot
	// (oneTimeCode; tests fix it).
	newCode func() (string, error)
}

// Run is `gatewayd init`; version is gatewayd's.
func Run(ctx context.Context, args []string, std cli.Stdio, version string) error {
	c := &initCmd{std: std, http: &http.Client{Timeout: initHTTPTimeout}, version: version}
	if err := c.parse(args); err != nil {
		return err
	}
	c.in = bufio.NewReader(std.In)
	c.interactive = !c.opts.yes && isTerminal(std.In)
	cfgPath, envPath, err := c.paths()
	if err != nil {
		return err
	}
	if err := c.checkOverwrite(cfgPath, envPath); err != nil {
		return err
	}
	st, err := c.collect(ctx)
	if err != nil {
		return err
	}
	c.codexLogin(ctx)
	yaml, err := c.yaml(envPath, st)
	if err != nil {
		return err
	}
	if err := c.write(cfgPath, envPath, yaml, st); err != nil {
		return err
	}
	return c.verify(ctx, cfgPath, envPath, st)
}

func (c *initCmd) parse(args []string) error {
	f := cli.NewFlags("init", c.std)
	o := &c.opts
	f.FS.StringVar(&o.envFile, "env-file", "", "environment file for the tokens (default: env beside the config)")
	f.FS.StringVar(&o.tgTokenFile, "telegram-token-file", "", "file holding the Telegram bot token")
	f.FS.StringVar(&o.dcTokenFile, "discord-token-file", "", "file holding the Discord bot token")
	o.slack.register(f.FS)
	o.matrix.register(f.FS)
	f.FS.Var(&o.allow, "allow-user", "user id to allow (telegram:ID, discord:ID, slack:ID, matrix:@NAME:SERVER, or ID for the one platform); repeatable")
	f.FS.Var(&o.projects, "project", "project name=dir; repeatable")
	f.FS.BoolVar(&o.yes, "yes", false, "non-interactive")
	f.FS.BoolVar(&o.force, "force", false, "overwrite existing files")
	f.FS.StringVar(&o.tgAPIURL, "telegram-api-url", telegram.DefaultAPIURL, "Telegram Bot API base URL")
	f.FS.StringVar(&o.dcAPIURL, "discord-api-url", initDiscordAPIURL, "Discord API base URL")
	pos, err := f.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return cli.Usagef("init takes no arguments, got %q", pos)
	}
	o.config = f.Config
	for _, u := range []*string{&o.tgAPIURL, &o.dcAPIURL} {
		*u = strings.TrimRight(*u, "/")
		if p, err := url.Parse(*u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return cli.Usagef("init: %q is not an http(s) URL", *u)
		}
	}
	if err := o.slack.checkURL(); err != nil {
		return err
	}
	return o.matrix.check(!o.yes && isTerminal(c.std.In))
}

// paths are the files init writes: --config, else $GATEWAYD_CONFIG, else
// /etc/gatewayd/gatewayd.yaml for root and the user's config directory
// otherwise (the first file gatewayd looks for); the env file sits beside it.
func (c *initCmd) paths() (string, string, error) {
	cfgPath := c.opts.config
	if cfgPath == "" {
		cfgPath = os.Getenv(config.EnvConfigFile)
	}
	if cfgPath == "" {
		files := config.DefaultFiles(os.Environ())
		cfgPath = files[len(files)-1]
		if os.Geteuid() != 0 && len(files) > 1 {
			cfgPath = files[0]
		}
	}
	envPath := c.opts.envFile
	if envPath == "" {
		envPath = filepath.Join(filepath.Dir(cfgPath), "env")
	}
	var err error
	if cfgPath, err = filepath.Abs(cfgPath); err != nil {
		return "", "", cli.Usagef("init: --config: %v", err)
	}
	if envPath, err = filepath.Abs(envPath); err != nil {
		return "", "", cli.Usagef("init: --env-file: %v", err)
	}
	if cfgPath == envPath {
		return "", "", cli.Usagef("init: --config and --env-file name the same file")
	}
	return cfgPath, envPath, nil
}

func (c *initCmd) checkOverwrite(paths ...string) error {
	if c.opts.force {
		return nil
	}
	var existing []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			existing = append(existing, p)
		}
	}
	if len(existing) == 0 {
		return nil
	}
	if c.interactive {
		ok, err := c.confirm(fmt.Sprintf("%s exists. Overwrite? [y/N] ", strings.Join(existing, " and ")), false)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return cli.Usagef("init: refusing to overwrite %s (use --force)", strings.Join(existing, " and "))
}

// collect gathers tokens, the allowlist and projects from the flags and,
// interactively, from prompts.
func (c *initCmd) collect(ctx context.Context) (*initState, error) {
	st := &initState{projects: map[string]string{}}
	var err error
	if c.opts.tgTokenFile != "" {
		if st.tgToken, err = readTokenFile("--telegram-token-file", c.opts.tgTokenFile); err != nil {
			return nil, err
		}
	}
	if c.opts.dcTokenFile != "" {
		if st.dcToken, err = readTokenFile("--discord-token-file", c.opts.dcTokenFile); err != nil {
			return nil, err
		}
	}
	if err := c.slackFiles(st); err != nil {
		return nil, err
	}
	if err := c.matrixFiles(st); err != nil {
		return nil, err
	}
	if !c.interactive && st.tgToken == "" && st.dcToken == "" && !c.opts.slack.given() && !c.opts.matrix.given() {
		return nil, cli.Usagef("init: give --telegram-token-file or --discord-token-file (or --slack-bot-token-file with --slack-app-token-file, " +
			"or --matrix-homeserver with --matrix-token-file or --matrix-user; or run init in a terminal without --yes)")
	}
	if err := c.allowFlags(st); err != nil {
		return nil, err
	}
	if err := c.projectFlags(st); err != nil {
		return nil, err
	}
	if err := c.tokens(ctx, st); err != nil {
		return nil, err
	}
	// Flags that name a platform init has no token for are a mistake.
	if st.tgToken == "" && len(st.tgUsers) > 0 {
		return nil, cli.Usagef("init: --allow-user telegram:… given but no Telegram token")
	}
	if st.dcToken == "" && len(st.dcUsers) > 0 {
		return nil, cli.Usagef("init: --allow-user discord:… given but no Discord token")
	}
	if st.tgToken != "" && len(st.tgUsers) == 0 {
		if !c.interactive {
			return nil, cli.Usagef("init: --allow-user is required for Telegram (numeric user id)")
		}
		if err := c.askTelegramUsers(ctx, st); err != nil {
			return nil, err
		}
	}
	if st.dcToken != "" && len(st.dcUsers) == 0 {
		if !c.interactive {
			return nil, cli.Usagef("init: --allow-user is required for Discord (numeric user id)")
		}
		ids, err := c.askIDs("Discord user ids to allow (Developer Mode, then right-click your name, Copy User ID; separate with spaces): ")
		if err != nil {
			return nil, err
		}
		st.dcUsers = ids
	}
	if err := c.slackUsers(st); err != nil {
		return nil, err
	}
	if err := c.matrixUsers(st); err != nil {
		return nil, err
	}
	if c.interactive && len(c.opts.projects) == 0 {
		if err := c.askProjects(st); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func readTokenFile(flagName, file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", cli.Usagef("init: %s: cannot read %s: %v", flagName, file, errorCause(err))
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", cli.Usagef("init: %s: %s is empty", flagName, file)
	}
	if msg := tokenProblem(tok); msg != "" {
		return "", cli.Usagef("init: %s: %s %s", flagName, file, msg)
	}
	return tok, nil
}

// tokenProblem rejects what cannot be a bot token or a line of an
// environment file; the message never quotes the token.
func tokenProblem(tok string) string {
	if strings.ContainsFunc(tok, func(r rune) bool {
		return r <= ' ' || r == 0x7f || r == '"' || r == '\'' || r == '\\' || r == '$' || r == '`'
	}) {
		return "does not hold a bot token (it has spaces, quotes or control characters)"
	}
	return ""
}

func errorCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (c *initCmd) allowFlags(st *initState) error {
	for _, a := range c.opts.allow {
		platform, id, prefixed := strings.Cut(a, ":")
		if !prefixed || strings.HasPrefix(a, "@") { // a bare Matrix id has colons of its own
			platform, id = c.onlyPlatform(), a
			if platform == "" {
				return cli.Usagef("init: --allow-user %s: say telegram:%s or discord:%s (or slack:…, matrix:…)", a, a, a)
			}
		}
		id = strings.TrimSpace(id)
		switch strings.ToLower(platform) {
		case "telegram", "discord":
			if _, err := strconv.ParseInt(id, 10, 64); err != nil {
				return cli.Usagef("init: --allow-user %s: user ids are numbers", a)
			}
			if strings.ToLower(platform) == "telegram" {
				st.tgUsers = appendUnique(st.tgUsers, id)
			} else {
				st.dcUsers = appendUnique(st.dcUsers, id)
			}
		case "slack":
			if msg := config.SlackID(id); msg != "" {
				return cli.Usagef("init: --allow-user %s: %s", a, msg)
			}
			st.slack.users = appendUnique(st.slack.users, id)
		case "matrix":
			if msg := config.MatrixUserID(id); msg != "" {
				return cli.Usagef("init: --allow-user %s: %s", a, msg)
			}
			st.matrix.users = appendUnique(st.matrix.users, id)
		default:
			return cli.Usagef("init: --allow-user %s: unknown platform %q (telegram, discord, slack or matrix)", a, platform)
		}
	}
	return nil
}

// onlyPlatform is the one platform the flags name a token for, "" when
// they name none or several: an --allow-user without a platform is its.
func (c *initCmd) onlyPlatform() string {
	var named []string
	for name, given := range map[string]bool{"telegram": c.opts.tgTokenFile != "", "discord": c.opts.dcTokenFile != "",
		"slack": c.opts.slack.given(), "matrix": c.opts.matrix.given()} {
		if given {
			named = append(named, name)
		}
	}
	if len(named) != 1 {
		return ""
	}
	return named[0]
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

func (c *initCmd) projectFlags(st *initState) error {
	for _, p := range c.opts.projects {
		if err := addProject(st, p); err != nil {
			return cli.Usagef("init: --project %s: %v", p, err)
		}
	}
	return nil
}

// addProject checks one name=dir with config's rules and records it with
// an absolute directory.
func addProject(st *initState, p string) error {
	name, dir, ok := strings.Cut(p, "=")
	name, dir = strings.TrimSpace(name), strings.TrimSpace(dir)
	if !ok || name == "" || dir == "" {
		return errors.New("not name=dir")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := config.CheckProject(st.projects, name, abs); err != nil {
		return err
	}
	st.projects[name] = abs
	return nil
}

// tokens checks the tokens from files and, interactively, asks for the
// missing ones until the platform accepts them (empty skips a platform).
func (c *initCmd) tokens(ctx context.Context, st *initState) error {
	type platform struct {
		name   string
		token  *string
		prompt string
		check  func(context.Context, string) error
	}
	platforms := []platform{
		{"telegram", &st.tgToken, "Telegram bot token (from @BotFather; empty to skip Telegram): ", c.checkTelegramToken},
		{"discord", &st.dcToken, "Discord bot token (Developer Portal, Bot, Reset Token; empty to skip Discord): ", c.checkDiscordToken},
	}
	fromFiles := st.tgToken != "" || st.dcToken != "" || c.opts.slack.given() || c.opts.matrix.given()
	for _, p := range platforms {
		if *p.token != "" {
			if err := p.check(ctx, *p.token); err != nil {
				if !c.interactive {
					return err
				}
				fmt.Fprintf(c.std.Err, "%v\n", err)
				*p.token = "" // ask for a better one below
			} else {
				continue
			}
		}
		if !c.interactive || (fromFiles && *p.token == "" && !c.tokenFileGiven(p.name)) {
			continue // the files chose the platforms
		}
		for {
			tok, err := c.askSecret(p.prompt)
			if err != nil {
				return err
			}
			if tok == "" {
				break
			}
			if msg := tokenProblem(tok); msg != "" {
				fmt.Fprintf(c.std.Err, "%s: that %s\n", p.name, msg)
				continue
			}
			if err := p.check(ctx, tok); err != nil {
				fmt.Fprintf(c.std.Err, "%v\n", err)
				continue
			}
			*p.token = tok
			break
		}
	}
	if err := c.slackTokens(ctx, st, fromFiles); err != nil {
		return err
	}
	if err := c.matrixTokens(ctx, st, fromFiles); err != nil {
		return err
	}
	if st.tgToken == "" && st.dcToken == "" && !st.slack.enabled() && !st.matrix.enabled() {
		return cli.Usagef("init: no bot token: gatewayd needs Telegram, Discord, Slack or Matrix")
	}
	return nil
}

func (c *initCmd) tokenFileGiven(platform string) bool {
	if platform == "telegram" {
		return c.opts.tgTokenFile != ""
	}
	return c.opts.dcTokenFile != ""
}

// tokenError is a platform refusing a token; exit 2 in --yes mode.
func tokenError(platform string, err error) error {
	return &cli.UsageError{Msg: fmt.Sprintf("init: %s rejected the bot token: %v", platform, err)}
}

func (c *initCmd) checkTelegramToken(ctx context.Context, tok string) error {
	bot, err := telegram.CheckToken(ctx, c.http, c.opts.tgAPIURL, tok)
	switch {
	case errors.Is(err, telegram.ErrTokenRefused):
		return tokenError("telegram", err)
	case err != nil:
		return fmt.Errorf("init: telegram: %w", err)
	}
	c.tgBot = bot.Username
	fmt.Fprintf(c.std.Out, "Telegram: token accepted (@%s)\n", bot.Username)
	return nil
}

func (c *initCmd) checkDiscordToken(ctx context.Context, tok string) error {
	bot, err := discord.CheckToken(ctx, c.http, c.opts.dcAPIURL, tok)
	switch {
	case errors.Is(err, discord.ErrTokenRefused):
		return tokenError("discord", err)
	case err != nil:
		return fmt.Errorf("init: discord: %w", err)
	}
	fmt.Fprintf(c.std.Out, "Discord: token accepted (%s)\n", bot.Username)
	return nil
}

// askTelegramUsers offers to learn the operator's user id from a one-time
// code they send the bot, else asks for ids.
func (c *initCmd) askTelegramUsers(ctx context.Context, st *initState) error {
	bot := "the bot"
	if c.tgBot != "" {
		bot = "@" + c.tgBot
	}
	learn, err := c.confirm(fmt.Sprintf("Learn your Telegram user id from a code you send to %s? [Y/n] ", bot), true)
	if err != nil {
		return err
	}
	if learn {
		id, err := c.learnTelegramUser(ctx, st.tgToken, bot)
		if err != nil {
			return err
		}
		if id != "" {
			st.tgUsers = appendUnique(st.tgUsers, id)
			return nil
		}
	}
	ids, err := c.askIDs("Telegram user ids to allow (numbers; @userinfobot tells yours; separate with spaces): ")
	if err != nil {
		return err
	}
	st.tgUsers = ids
	return nil
}

// senderLabel names a Telegram user for the operator's confirmation.
func senderLabel(s *models.User) string {
	name := strings.TrimSpace(s.FirstName + " " + s.LastName)
	if s.Username != "" {
		if name != "" {
			name += ", "
		}
		name += "@" + s.Username
	}
	// The name is the sender's choice: keep terminal control characters out.
	name = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, name)
	if name == "" {
		return strconv.FormatInt(s.ID, 10)
	}
	return fmt.Sprintf("%d (%s)", s.ID, name)
}

func (c *initCmd) askIDs(prompt string) ([]string, error) {
	for {
		line, err := c.ask(prompt)
		if err != nil {
			return nil, err
		}
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		var ids []string
		bad := ""
		for _, f := range fields {
			if _, err := strconv.ParseInt(f, 10, 64); err != nil {
				bad = f
				break
			}
			ids = appendUnique(ids, f)
		}
		switch {
		case bad != "":
			fmt.Fprintf(c.std.Err, "%q is not a numeric user id\n", bad)
		case len(ids) == 0:
			fmt.Fprintln(c.std.Err, "at least one user id is needed: gatewayd ignores everyone else")
		default:
			return ids, nil
		}
	}
}

func (c *initCmd) askProjects(st *initState) error {
	for {
		line, err := c.ask("Project (name=/absolute/dir; empty when done): ")
		if err != nil {
			return err
		}
		if line == "" {
			return nil
		}
		if err := addProject(st, line); err != nil {
			fmt.Fprintf(c.std.Err, "%v\n", err)
		}
	}
}

// codexLogin says whether codex is logged in, and what to do if not.
func (c *initCmd) codexLogin(ctx context.Context) {
	command := os.Getenv(config.EnvName("codex.command"))
	if command == "" {
		command = "codex"
	}
	binary, err := codex.ResolveCommand(command)
	if err != nil {
		fmt.Fprintf(c.std.Out, "Codex: %q not found; install @openai/codex@%s (npm) or set codex.command, then log in with `codex login --device-auth` as the service user.\n",
			command, doctor.PinnedCodexVersion)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, initHTTPTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, binary, "login", "status")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard // its output may describe the credential
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(c.std.Out, "Codex: not logged in (`codex login status` failed). Log in as the service user: "+
			"`sudo -u gatewayd HOME=/var/lib/gatewayd codex login --device-auth`, or send /login in a private chat with the bot once gatewayd runs.")
		return
	}
	fmt.Fprintf(c.std.Out, "Codex: logged in (%s)\n", binary)
}

// yaml is the config: only the keys init set, written by config.
func (c *initCmd) yaml(envPath string, st *initState) (string, error) {
	values := map[string]any{}
	if st.tgToken != "" {
		if c.opts.tgAPIURL != telegram.DefaultAPIURL {
			values["telegram.api_url"] = c.opts.tgAPIURL
		}
		values["telegram.allowed_users"] = st.tgUsers
	}
	if st.dcToken != "" {
		if c.opts.dcAPIURL != initDiscordAPIURL {
			values["discord.api_url"] = c.opts.dcAPIURL
		}
		values["discord.allowed_users"] = st.dcUsers
	}
	c.slackYAML(values, st)
	c.matrixYAML(values, st)
	if len(st.projects) > 0 {
		values["projects"] = st.projects
	}
	comment := "Written by `gatewayd init`. Only the keys it set are here; every other key,\n" +
		"with its default and meaning, is documented in deploy/gatewayd.yaml.\n" +
		"The bot tokens are not in this file: they are in " + envPath + "\n" +
		"(" + strings.Join(tokenEnvNames(st), " / ") + ")."
	var b strings.Builder
	if err := config.WriteYAML(&b, comment, values); err != nil {
		return "", fmt.Errorf("init: %w", err)
	}
	return b.String(), nil
}

// verify loads the written config as the service would (the tokens from
// the environment file) and runs the doctor on it. A doctor's failure is
// shown, not init's failure: the files are written.
func (c *initCmd) verify(ctx context.Context, cfgPath, envPath string, st *initState) error {
	opts := config.Options{File: cfgPath, Env: serviceEnv(os.Environ(), st)}
	if _, err := config.Load(opts); err != nil {
		return fmt.Errorf("init: the written config does not load: %w", err)
	}
	fmt.Fprintf(c.std.Out, "Config valid. Running `gatewayd doctor --config %s`:\n", cfgPath)
	err := doctor.Check(ctx, opts, c.std.Out, c.version)
	switch {
	case errors.Is(err, doctor.ErrChecksFailed):
		fmt.Fprintln(c.std.Out, "The files are written; fix what the doctor reports (✗) before starting gatewayd.")
	case err != nil:
		fmt.Fprintf(c.std.Out, "doctor: %v\n", err)
	}
	if cfgPath == "/etc/gatewayd/gatewayd.yaml" && envPath == "/etc/gatewayd/env" {
		fmt.Fprintln(c.std.Out, "Next: sudo systemctl enable --now gatewayd (deploy/systemd/gatewayd.service reads both files).")
	} else {
		fmt.Fprintf(c.std.Out, "Next: set -a; . %s; set +a; gatewayd run --config %s\n", envPath, cfgPath)
	}
	return nil
}

// tokenEnv is the environment file's variables: the tokens init keeps.
func tokenEnv(st *initState) [][2]string {
	var env [][2]string
	for _, v := range [][2]string{{envTelegramToken, st.tgToken}, {envDiscordToken, st.dcToken},
		{envSlackBotToken, st.slack.botToken}, {envSlackAppToken, st.slack.appToken}, {envMatrixToken, st.matrix.token}} {
		if v[1] != "" {
			env = append(env, v)
		}
	}
	return env
}

// tokenEnvNames names the variables of tokenEnv.
func tokenEnvNames(st *initState) []string {
	var names []string
	for _, v := range tokenEnv(st) {
		names = append(names, v[0])
	}
	return names
}

// serviceEnv is environ with the token variables the environment file
// sets, and without those it does not: what the service will see.
func serviceEnv(environ []string, st *initState) []string {
	ours := map[string]bool{envTelegramToken: true, envDiscordToken: true, envSlackBotToken: true, envSlackAppToken: true, envMatrixToken: true}
	env := make([]string, 0, len(environ)+5)
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); !ours[name] {
			env = append(env, kv)
		}
	}
	for _, v := range tokenEnv(st) {
		env = append(env, v[0]+"="+v[1])
	}
	return env
}
