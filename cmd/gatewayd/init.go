package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/runtime/codex"
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

// initProjectName mirrors the config package's project-name rule so a bad
// --project fails before anything is written.
var initProjectName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

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
}

// initState is what init collects before it writes.
type initState struct {
	tgToken, dcToken string
	tgUsers, dcUsers []string
	projects         map[string]string
}

type initCmd struct {
	opts        initOptions
	std         stdio
	in          *bufio.Reader
	interactive bool
	http        *http.Client
	tgBot       string // the bot's @username, once getMe answered
	// newCode makes the one-time code the operator sends the bot
	// (oneTimeCode; tests fix it).
	newCode func() (string, error)
}

func cmdInit(ctx context.Context, args []string, std stdio) error {
	c := &initCmd{std: std, http: &http.Client{Timeout: initHTTPTimeout}}
	if err := c.parse(args); err != nil {
		return err
	}
	c.in = bufio.NewReader(std.in)
	c.interactive = !c.opts.yes && initIsTerminal(std.in)
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
	if err := c.write(cfgPath, envPath, st); err != nil {
		return err
	}
	return c.verify(ctx, cfgPath, envPath, st)
}

func (c *initCmd) parse(args []string) error {
	f := newFlags("init", c.std)
	o := &c.opts
	f.fs.StringVar(&o.envFile, "env-file", "", "environment file for the tokens (default: env beside the config)")
	f.fs.StringVar(&o.tgTokenFile, "telegram-token-file", "", "file holding the Telegram bot token")
	f.fs.StringVar(&o.dcTokenFile, "discord-token-file", "", "file holding the Discord bot token")
	f.fs.Var(&o.allow, "allow-user", "user id to allow (telegram:ID, discord:ID, or ID for the one platform); repeatable")
	f.fs.Var(&o.projects, "project", "project name=dir; repeatable")
	f.fs.BoolVar(&o.yes, "yes", false, "non-interactive")
	f.fs.BoolVar(&o.force, "force", false, "overwrite existing files")
	f.fs.StringVar(&o.tgAPIURL, "telegram-api-url", telegram.DefaultAPIURL, "Telegram Bot API base URL")
	f.fs.StringVar(&o.dcAPIURL, "discord-api-url", initDiscordAPIURL, "Discord API base URL")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("init takes no arguments, got %q", pos)
	}
	o.config = f.config
	for _, u := range []*string{&o.tgAPIURL, &o.dcAPIURL} {
		*u = strings.TrimRight(*u, "/")
		if p, err := url.Parse(*u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return usagef("init: %q is not an http(s) URL", *u)
		}
	}
	return nil
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
		return "", "", usagef("init: --config: %v", err)
	}
	if envPath, err = filepath.Abs(envPath); err != nil {
		return "", "", usagef("init: --env-file: %v", err)
	}
	if cfgPath == envPath {
		return "", "", usagef("init: --config and --env-file name the same file")
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
	return usagef("init: refusing to overwrite %s (use --force)", strings.Join(existing, " and "))
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
	if !c.interactive && st.tgToken == "" && st.dcToken == "" {
		return nil, usagef("init: give --telegram-token-file or --discord-token-file (or run init in a terminal without --yes)")
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
		return nil, usagef("init: --allow-user telegram:… given but no Telegram token")
	}
	if st.dcToken == "" && len(st.dcUsers) > 0 {
		return nil, usagef("init: --allow-user discord:… given but no Discord token")
	}
	if st.tgToken != "" && len(st.tgUsers) == 0 {
		if !c.interactive {
			return nil, usagef("init: --allow-user is required for Telegram (numeric user id)")
		}
		if err := c.askTelegramUsers(ctx, st); err != nil {
			return nil, err
		}
	}
	if st.dcToken != "" && len(st.dcUsers) == 0 {
		if !c.interactive {
			return nil, usagef("init: --allow-user is required for Discord (numeric user id)")
		}
		ids, err := c.askIDs("Discord user ids to allow (Developer Mode, then right-click your name, Copy User ID; separate with spaces): ")
		if err != nil {
			return nil, err
		}
		st.dcUsers = ids
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
		return "", usagef("init: %s: cannot read %s: %v", flagName, file, errorCause(err))
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", usagef("init: %s: %s is empty", flagName, file)
	}
	if msg := tokenProblem(tok); msg != "" {
		return "", usagef("init: %s: %s %s", flagName, file, msg)
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
		if !prefixed {
			id = a
			switch {
			case c.opts.tgTokenFile != "" && c.opts.dcTokenFile == "":
				platform = "telegram"
			case c.opts.dcTokenFile != "" && c.opts.tgTokenFile == "":
				platform = "discord"
			default:
				return usagef("init: --allow-user %s: say telegram:%s or discord:%s", a, a, a)
			}
		}
		id = strings.TrimSpace(id)
		if _, err := strconv.ParseInt(id, 10, 64); err != nil {
			return usagef("init: --allow-user %s: user ids are numbers", a)
		}
		switch strings.ToLower(platform) {
		case "telegram":
			st.tgUsers = appendUnique(st.tgUsers, id)
		case "discord":
			st.dcUsers = appendUnique(st.dcUsers, id)
		default:
			return usagef("init: --allow-user %s: unknown platform %q (telegram or discord)", a, platform)
		}
	}
	return nil
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
			return usagef("init: --project %s: %v", p, err)
		}
	}
	return nil
}

// addProject checks one name=dir and records it with an absolute directory.
func addProject(st *initState, p string) error {
	name, dir, ok := strings.Cut(p, "=")
	name, dir = strings.TrimSpace(name), strings.TrimSpace(dir)
	if !ok || name == "" || dir == "" {
		return errors.New("not name=dir")
	}
	if !initProjectName.MatchString(name) {
		return errors.New("a project name is 1-64 letters, digits, '.', '_' or '-'")
	}
	for other := range st.projects {
		if strings.EqualFold(other, name) {
			return fmt.Errorf("project %q given twice (names are compared ignoring case)", other)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return fmt.Errorf("directory %s does not exist or cannot be read (%v)", abs, errorCause(err))
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", abs)
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
	fromFiles := st.tgToken != "" || st.dcToken != ""
	for _, p := range platforms {
		if *p.token != "" {
			if err := p.check(ctx, *p.token); err != nil {
				if !c.interactive {
					return err
				}
				fmt.Fprintf(c.std.err, "%v\n", err)
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
				fmt.Fprintf(c.std.err, "%s: that %s\n", p.name, msg)
				continue
			}
			if err := p.check(ctx, tok); err != nil {
				fmt.Fprintf(c.std.err, "%v\n", err)
				continue
			}
			*p.token = tok
			break
		}
	}
	if st.tgToken == "" && st.dcToken == "" {
		return usagef("init: no bot token: gatewayd needs Telegram or Discord")
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
func tokenError(platform, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf("init: %s rejected the bot token: ", platform) + fmt.Sprintf(format, args...)}
}

// getJSON fetches u; the error never contains u (it may hold a token), shown
// is what the error names instead.
func (c *initCmd) getJSON(ctx context.Context, u, shown string, header map[string]string, out any) (int, error) {
	status, body, err := getWithoutURL(ctx, c.http, u, header)
	if err != nil {
		return status, fmt.Errorf("GET %s: %v", shown, err)
	}
	if err := json.Unmarshal(body, out); err != nil && status == http.StatusOK {
		return status, fmt.Errorf("GET %s: the answer is not JSON", shown)
	}
	return status, nil
}

func (c *initCmd) checkTelegramToken(ctx context.Context, tok string) error {
	shown := c.opts.tgAPIURL + "/bot<token>/getMe"
	var body struct {
		OK     bool   `json:"ok"`
		Desc   string `json:"description"`
		Result struct {
			Username string `json:"username"`
		} `json:"result"`
	}
	status, err := c.getJSON(ctx, c.opts.tgAPIURL+"/bot"+tok+"/getMe", shown, nil, &body)
	switch {
	case err != nil:
		return fmt.Errorf("init: telegram: %w", err)
	case status != http.StatusOK || !body.OK:
		return tokenError("telegram", "%s answered %d %s", shown, status, scrub(body.Desc, tok))
	}
	c.tgBot = body.Result.Username
	fmt.Fprintf(c.std.out, "Telegram: token accepted (@%s)\n", body.Result.Username)
	return nil
}

func (c *initCmd) checkDiscordToken(ctx context.Context, tok string) error {
	shown := c.opts.dcAPIURL + "/api/v10/users/@me"
	var body struct {
		Username string `json:"username"`
		Message  string `json:"message"`
	}
	status, err := c.getJSON(ctx, shown, shown, map[string]string{"Authorization": "Bot " + tok}, &body)
	switch {
	case err != nil:
		return fmt.Errorf("init: discord: %w", err)
	case status != http.StatusOK:
		return tokenError("discord", "%s answered %d %s", shown, status, scrub(body.Message, tok))
	}
	fmt.Fprintf(c.std.out, "Discord: token accepted (%s)\n", body.Username)
	return nil
}

// scrub removes a secret from text a server sent back.
func scrub(text, secret string) string {
	if secret == "" {
		return text
	}
	return strings.ReplaceAll(text, secret, "<token>")
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

type tgSender struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Username  string `json:"username"`
}

func (s tgSender) label() string {
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
			fmt.Fprintf(c.std.err, "%q is not a numeric user id\n", bad)
		case len(ids) == 0:
			fmt.Fprintln(c.std.err, "at least one user id is needed: gatewayd ignores everyone else")
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
			fmt.Fprintf(c.std.err, "%v\n", err)
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
		fmt.Fprintf(c.std.out, "Codex: %q not found; install @openai/codex@%s (npm) or set codex.command, then log in with `codex login --device-auth` as the service user.\n",
			command, pinnedCodexVersion)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, initHTTPTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, binary, "login", "status")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard // its output may describe the credential
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(c.std.out, "Codex: not logged in (`codex login status` failed). Log in as the service user: "+
			"`sudo -u gatewayd HOME=/var/lib/gatewayd codex login --device-auth`, or send /login in a private chat with the bot once gatewayd runs.")
		return
	}
	fmt.Fprintf(c.std.out, "Codex: logged in (%s)\n", binary)
}

// write writes the environment file, then the config, each atomically.
func (c *initCmd) write(cfgPath, envPath string, st *initState) error {
	group := serviceGroup()
	var env strings.Builder
	env.WriteString("# gatewayd secrets, written by `gatewayd init`; systemd reads it (EnvironmentFile=).\n")
	if st.tgToken != "" {
		fmt.Fprintf(&env, "%s=%s\n", envTelegramToken, st.tgToken)
	}
	if st.dcToken != "" {
		fmt.Fprintf(&env, "%s=%s\n", envDiscordToken, st.dcToken)
	}
	envMode := os.FileMode(0o600)
	if group >= 0 {
		envMode = 0o640
	}
	if err := writeFileAtomic(envPath, []byte(env.String()), envMode, group); err != nil {
		return fmt.Errorf("init: write %s: %w", envPath, errorCause(err))
	}
	if err := writeFileAtomic(cfgPath, []byte(c.yaml(envPath, st)), 0o640, group); err != nil {
		return fmt.Errorf("init: write %s: %w", cfgPath, errorCause(err))
	}
	fmt.Fprintf(c.std.out, "Wrote %s (mode 0640) and %s (mode %04o; the token(s)).\n", cfgPath, envPath, envMode)
	return nil
}

// serviceGroup is the gatewayd group's id when init runs as root and the
// group exists (the service user then reads both files), else -1.
func serviceGroup() int {
	if os.Geteuid() != 0 {
		return -1
	}
	g, err := user.LookupGroup("gatewayd")
	if err != nil {
		return -1
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return -1
	}
	return gid
}

func writeFileAtomic(path string, data []byte, mode os.FileMode, gid int) error {
	dir := filepath.Dir(path)
	dirMode := os.FileMode(0o755)
	if gid >= 0 {
		dirMode = 0o750
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return err
		}
		if gid >= 0 {
			if err := os.Chown(dir, -1, gid); err != nil {
				return err
			}
		}
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if gid >= 0 {
		if err := f.Chown(-1, gid); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// yaml is the config: only the keys init set. Strings are double-quoted
// (strconv.Quote's escapes are valid YAML).
func (c *initCmd) yaml(envPath string, st *initState) string {
	var b strings.Builder
	b.WriteString("# Written by `gatewayd init`. Only the keys it set are here; every other key,\n")
	b.WriteString("# with its default and meaning, is documented in deploy/gatewayd.yaml.\n")
	fmt.Fprintf(&b, "# The bot tokens are not in this file: they are in %s\n", envPath)
	b.WriteString("# (GATEWAYD_TELEGRAM_TOKEN / GATEWAYD_DISCORD_TOKEN).\n")
	list := func(ids []string) string {
		q := make([]string, len(ids))
		for i, id := range ids {
			q[i] = strconv.Quote(id)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	if st.tgToken != "" {
		b.WriteString("\ntelegram:\n")
		if c.opts.tgAPIURL != telegram.DefaultAPIURL {
			fmt.Fprintf(&b, "  api_url: %s\n", strconv.Quote(c.opts.tgAPIURL))
		}
		fmt.Fprintf(&b, "  allowed_users: %s\n", list(st.tgUsers))
	}
	if st.dcToken != "" {
		b.WriteString("\ndiscord:\n")
		if c.opts.dcAPIURL != initDiscordAPIURL {
			fmt.Fprintf(&b, "  api_url: %s\n", strconv.Quote(c.opts.dcAPIURL))
		}
		fmt.Fprintf(&b, "  allowed_users: %s\n", list(st.dcUsers))
	}
	if len(st.projects) > 0 {
		b.WriteString("\nprojects:\n")
		names := make([]string, 0, len(st.projects))
		for n := range st.projects {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "  %s: %s\n", strconv.Quote(n), strconv.Quote(st.projects[n]))
		}
	}
	return b.String()
}

// verify loads the written config as the service would (the tokens from
// the environment file) and runs the doctor on it. A doctor's failure is
// shown, not init's failure: the files are written.
func (c *initCmd) verify(ctx context.Context, cfgPath, envPath string, st *initState) error {
	restore := setEnv(map[string]string{envTelegramToken: st.tgToken, envDiscordToken: st.dcToken})
	defer restore()
	if _, err := config.Load(config.Options{File: cfgPath, Env: os.Environ()}); err != nil {
		return fmt.Errorf("init: the written config does not load: %w", err)
	}
	fmt.Fprintf(c.std.out, "Config valid. Running `gatewayd doctor --config %s`:\n", cfgPath)
	err := cmdDoctor(ctx, []string{"--config", cfgPath}, c.std)
	switch {
	case errors.Is(err, errChecksFailed):
		fmt.Fprintln(c.std.out, "The files are written; fix what the doctor reports (✗) before starting gatewayd.")
	case err != nil:
		fmt.Fprintf(c.std.out, "doctor: %v\n", err)
	}
	if cfgPath == "/etc/gatewayd/gatewayd.yaml" && envPath == "/etc/gatewayd/env" {
		fmt.Fprintln(c.std.out, "Next: sudo systemctl enable --now gatewayd (deploy/systemd/gatewayd.service reads both files).")
	} else {
		fmt.Fprintf(c.std.out, "Next: set -a; . %s; set +a; gatewayd run --config %s\n", envPath, cfgPath)
	}
	return nil
}

// setEnv sets (or, for "", unsets: the service would not have them either)
// variables and returns a function restoring the previous environment.
func setEnv(vars map[string]string) func() {
	type old struct {
		v  string
		ok bool
	}
	saved := map[string]old{}
	for k, v := range vars {
		prev, ok := os.LookupEnv(k)
		saved[k] = old{prev, ok}
		if v == "" {
			os.Unsetenv(k)
		} else {
			os.Setenv(k, v)
		}
	}
	return func() {
		for k, o := range saved {
			if o.ok {
				os.Setenv(k, o.v)
			} else {
				os.Unsetenv(k)
			}
		}
	}
}

// ask prints prompt and reads one line (trimmed). End of input is an error.
func (c *initCmd) ask(prompt string) (string, error) {
	fmt.Fprint(c.std.out, prompt)
	line, err := c.in.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		fmt.Fprintln(c.std.out)
		return "", &usageError{msg: "init: input ended before the questions were answered"}
	}
	return strings.TrimSpace(line), nil
}

func (c *initCmd) confirm(prompt string, def bool) (bool, error) {
	for {
		line, err := c.ask(prompt)
		if err != nil {
			return false, err
		}
		switch strings.ToLower(line) {
		case "":
			return def, nil
		case "y", "yes":
			return true, nil
		case "n", "no":
			return false, nil
		}
	}
}

// askSecret reads a line with the terminal's echo off.
func (c *initCmd) askSecret(prompt string) (string, error) {
	restore, err := echoOff(c.std.in)
	if err != nil {
		fmt.Fprintf(c.std.err, "(cannot turn off echo: %v; the token will be visible as you type)\n", err)
	}
	if restore != nil {
		// Ctrl-C while echo is off must not leave the terminal silent.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		stop := make(chan struct{})
		go func() {
			select {
			case sig := <-sigs:
				restore()
				fmt.Fprintln(c.std.out)
				signal.Stop(sigs)
				_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
			case <-stop:
			}
		}()
		defer func() {
			signal.Stop(sigs)
			close(stop)
			restore()
			fmt.Fprintln(c.std.out) // the Enter was not echoed
		}()
	}
	return c.ask(prompt)
}

var _ flag.Value = (*listFlag)(nil)
