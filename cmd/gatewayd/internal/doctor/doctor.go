// Package doctor is `gatewayd doctor`: one line per check of the
// configuration, the state, codex and its account, the bot tokens (through
// the platforms' own checks; Slack's Socket Mode connection too), api.listen
// and who may use the API.
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/daemon"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// PinnedCodexVersion is the codex release this gatewayd was verified
// against: tools/package.json pins it (a test keeps the two equal). Another
// release is only a warning: what decides is whether its app-server
// answers the calls gatewayd makes (checkAppServer).
const PinnedCodexVersion = "0.171.0"

// doctorTimeout bounds each network check (codex start, token checks,
// the listener probe), so a hung peer fails its line instead of the doctor.
const doctorTimeout = 30 * time.Second

// ErrChecksFailed ends `gatewayd doctor` with exit 1 after its report.
var ErrChecksFailed = errors.New("doctor: some checks failed")

// doctor prints one line per check: ✓, ⚠ or ✗, what was found and, for ✗,
// the fix (for ⚠, a hint). Only ✗ fails the doctor. It never prints a token.
type doctor struct {
	out     io.Writer
	failed  int
	http    *http.Client
	version string // gatewayd's: the app-server client's version
}

func (d *doctor) pass(format string, args ...any) {
	fmt.Fprintf(d.out, "✓ %s\n", fmt.Sprintf(format, args...))
}

// warn reports something that works but is not what gatewayd was tested
// with; it does not change the exit code.
func (d *doctor) warn(what, hint string) {
	fmt.Fprintf(d.out, "⚠ %s\n    hint: %s\n", what, hint)
}

func (d *doctor) fail(what, fix string) {
	d.failed++
	fmt.Fprintf(d.out, "✗ %s\n    fix: %s\n", what, fix)
}

// Run is `gatewayd doctor`; version is gatewayd's.
func Run(ctx context.Context, args []string, std cli.Stdio, version string) error {
	f := cli.NewFlags("doctor", std)
	pos, err := f.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return cli.Usagef("doctor takes no arguments, got %q", pos)
	}
	return Check(ctx, f.Options(), std.Out, version)
}

// Check runs every check on the configuration opts load and reports to
// out; ErrChecksFailed when one failed.
func Check(ctx context.Context, opts config.Options, out io.Writer, version string) error {
	d := &doctor{out: out, http: &http.Client{Timeout: doctorTimeout}, version: version}
	cfg := d.checkConfig(opts)
	if cfg != nil {
		d.checkStateDir(cfg.StateDir)
		if cfg.Store.Postgres() {
			before := d.failed
			d.checkPostgres(ctx, cfg.Store.DSN)
			if d.failed == before { // an unreachable server is one failure, not two
				d.checkCluster(ctx, cfg)
			}
		} else {
			d.checkDatabase(ctx, cfg.DatabasePath())
		}
		if binary, pinned := d.checkCodexBinary(ctx, cfg.Codex.Command); binary != "" {
			d.checkAppServer(ctx, cfg, binary, pinned)
		}
		d.checkTelegram(ctx, cfg.Telegram)
		d.checkDiscord(ctx, cfg.Discord)
		d.checkSlack(ctx, cfg.Slack)
		d.checkMatrix(ctx, cfg.Matrix)
		d.checkListen(ctx, cfg.API.Listen)
		d.checkAPIAccess(cfg)
	}
	if d.failed > 0 {
		fmt.Fprintf(out, "%d check(s) failed.\n", d.failed)
		return ErrChecksFailed
	}
	fmt.Fprintln(out, "All checks passed.")
	return nil
}

// checkConfig loads and validates the configuration; the other checks
// need it, so nil stops the doctor there.
func (d *doctor) checkConfig(opts config.Options) *config.Config {
	cfg, err := config.Load(opts)
	if err == nil {
		err = daemon.CheckRuntime(cfg)
	}
	if err != nil {
		d.fail("config: "+err.Error(), "correct the key named above (`gatewayd check-config` shows the effective config)")
		return nil
	}
	file := cfg.File
	if file == "" {
		file = "defaults and environment only"
	}
	d.pass("config valid (%s)", file)
	return cfg
}

// checkStateDir writes and removes a file in the state directory, or, when
// it does not exist yet, checks that the daemon can create it.
func (d *doctor) checkStateDir(dir string) {
	probeDir := dir
	for {
		if _, err := os.Stat(probeDir); err == nil {
			break
		}
		parent := filepath.Dir(probeDir)
		if parent == probeDir {
			break
		}
		probeDir = parent
	}
	f, err := os.CreateTemp(probeDir, ".gatewayd-doctor-*")
	if err != nil {
		d.fail(fmt.Sprintf("state dir %s is not writable: %v", dir, err),
			"make it writable by the service user (systemd: StateDirectory=gatewayd) or set state_dir")
		return
	}
	f.Close()
	os.Remove(f.Name())
	if probeDir != dir {
		d.pass("state dir %s does not exist yet; it can be created in %s", dir, probeDir)
		return
	}
	d.pass("state dir %s is writable", dir)
}

func (d *doctor) checkDatabase(ctx context.Context, path string) {
	h, err := store.Inspect(ctx, path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		d.pass("database %s: none yet (created at the first start, schema version %d)", path, h.WantVersion)
		return
	case err != nil:
		d.fail(fmt.Sprintf("database %s cannot be read: %v", path, err),
			"check the file's owner and permissions; restore it from a backup if it is damaged")
		return
	case h.QuickCheck != "ok":
		d.fail(fmt.Sprintf("database %s integrity: %s", path, h.QuickCheck),
			"stop gatewayd and restore the database from a backup (or recover it with sqlite3 .recover)")
	default:
		d.pass("database %s integrity ok (PRAGMA quick_check)", path)
	}
	d.checkSchema(h)
}

func (d *doctor) checkSchema(h store.Health) {
	switch {
	case h.SchemaVersion > h.WantVersion:
		d.fail(fmt.Sprintf("database schema version %d is newer than this gatewayd's %d", h.SchemaVersion, h.WantVersion),
			"run the newer gatewayd binary that wrote it")
	case h.SchemaVersion < h.WantVersion:
		d.pass("database schema version %d; this gatewayd migrates it to %d at start", h.SchemaVersion, h.WantVersion)
	default:
		d.pass("database schema version %d (current)", h.SchemaVersion)
	}
}

// checkCodexBinary finds the native codex binary and compares its version
// with the pinned one; it returns the binary ("" when not found) and
// whether it is the pinned version. Another version is a warning: users
// update codex, and the app-server checks that follow tell whether this
// one still speaks the protocol gatewayd uses.
func (d *doctor) checkCodexBinary(ctx context.Context, command string) (string, bool) {
	binary, err := codex.ResolveCommand(command)
	if err != nil {
		d.fail(fmt.Sprintf("codex binary: %v", err),
			fmt.Sprintf("install @openai/codex@%s (npm) or set codex.command to the native binary", PinnedCodexVersion))
		return "", false
	}
	vctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	out, err := exec.CommandContext(vctx, binary, "--version").Output()
	if err != nil {
		d.fail(fmt.Sprintf("codex binary %s does not run: %v", binary, err), "reinstall @openai/codex@"+PinnedCodexVersion)
		return "", false
	}
	version := CodexVersion(string(out))
	if version != PinnedCodexVersion {
		if version == "" {
			version = "unknown"
		}
		d.warn(fmt.Sprintf("codex binary %s, version %s (gatewayd is tested with %s)", binary, version, PinnedCodexVersion),
			"the app-server checks below tell whether it works with gatewayd; @openai/codex@"+PinnedCodexVersion+" is the tested one")
		return binary, false
	}
	d.pass("codex binary %s, version %s (pinned)", binary, version)
	return binary, true
}

// CodexVersion takes the version from `codex --version` ("codex-cli 0.169.0").
func CodexVersion(out string) string {
	fields := strings.Fields(out)
	if len(fields) == 0 {
		return ""
	}
	return fields[len(fields)-1]
}

// checkAppServer starts the app-server as the daemon would, makes the
// calls gatewayd relies on that need no model, and reads its account:
// either an account or a provider that needs no OpenAI login. pinned says
// whether the binary is the tested codex; when not, the fixes name it.
func (d *doctor) checkAppServer(ctx context.Context, cfg *config.Config, binary string, pinned bool) {
	dir := cfg.Codex.Cwd
	if _, err := os.Stat(dir); err != nil {
		dir = os.TempDir() // the daemon creates it; the doctor changes nothing
	}
	args, err := daemon.CodexArgs(cfg)
	if err != nil {
		d.fail(fmt.Sprintf("codex app-server: %v", err), "set codex.command to the codex binary")
		return
	}
	started := time.Now()
	cx, err := codex.Start(ctx, codex.Options{
		Command: cfg.Codex.Command, Args: args, Home: cfg.Codex.Home,
		Env: daemon.ChildEnv(os.Environ()), Dir: dir, StartTimeout: doctorTimeout,
		MaxProcesses: cfg.Codex.MaxProcesses, MaxFileSize: cfg.Codex.MaxFileSize,
		Logger: zap.NewNop(), ClientName: "gatewayd-doctor", ClientVersion: d.version,
	})
	versionFix := "check the codex version (see above)"
	if !pinned {
		versionFix = "install @openai/codex@" + PinnedCodexVersion + ", the version gatewayd is tested with"
	}
	if err != nil {
		fix := "run `codex app-server` by hand with the same codex.home and codex.args to see its error"
		if !pinned {
			fix = versionFix + ", or " + fix
		}
		d.fail(fmt.Sprintf("codex app-server did not start: %v", err), fix)
		return
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = cx.Close(cctx)
	}()
	d.pass("codex app-server started; initialize answered in %s", time.Since(started).Round(time.Millisecond))
	actx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	d.checkModelCalls(actx, cx, versionFix)
	a, err := cx.Account(actx)
	switch {
	case err != nil:
		d.fail(fmt.Sprintf("codex account/read failed: %v", err), versionFix)
	case !a.Usable():
		login := "codex"
		if binary == codex.BundledCommand {
			login = binary // the package's codex is not on PATH
		}
		d.fail("codex has no account and its provider needs an OpenAI login",
			"run `"+login+" login --device-auth` as the service user (same CODEX_HOME), log in from the web console's banner, "+
				"send /login to the bot in a private chat, or configure a model provider in CODEX_HOME/config.toml")
	case a.Type != "":
		d.pass("codex account: %s", accountLabel(a))
	default:
		d.pass("codex uses a configured model provider (no OpenAI login needed)")
	}
	d.checkIsolation(ctx, cx, cfg)
	d.checkGitBoundary(ctx, cx, cfg)
}

// checkModelCalls makes the app-server calls behind /model and /effort,
// which need no model request: model/list, and config/read for the
// defaults a lane goes back to. An app-server that initializes but has
// changed these would break those commands, not the start.
func (d *doctor) checkModelCalls(ctx context.Context, cx *codex.Client, fix string) {
	models, err := cx.ListModels(ctx)
	if err == nil {
		_, err = cx.ModelDefaults(ctx)
	}
	if err != nil {
		d.fail(fmt.Sprintf("codex app-server call failed: %v", err), fix)
		return
	}
	d.pass("codex app-server answers model/list (%d models) and config/read", len(models))
}

func accountLabel(a codex.Account) string {
	parts := []string{a.Type}
	for _, p := range []string{a.Email, a.PlanType} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}

func (d *doctor) checkTelegram(ctx context.Context, tg config.Telegram) {
	if !tg.Enabled() {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	bot, err := telegram.CheckToken(cctx, d.http, strings.TrimRight(tg.APIURL, "/"), tg.Token)
	switch {
	case errors.Is(err, telegram.ErrTokenRefused):
		d.fail("telegram token refused: "+err.Error(), "set telegram.token (or telegram.token_file) to the token @BotFather gave")
	case err != nil:
		d.fail("telegram: "+err.Error(), "check the network path to the Bot API (telegram.api_url)")
	default:
		d.pass("telegram token accepted (@%s)", bot.Username)
	}
	d.checkAllowlist("telegram", len(tg.AllowedUsers)+len(tg.AllowedChats),
		fmt.Sprintf("%d user(s), %d chat(s)", len(tg.AllowedUsers), len(tg.AllowedChats)),
		"set telegram.allowed_users (numeric ids) or telegram.allowed_chats")
}

func (d *doctor) checkDiscord(ctx context.Context, dc config.Discord) {
	if !dc.Enabled() {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	bot, err := discord.CheckToken(cctx, d.http, strings.TrimRight(dc.APIURL, "/"), dc.Token)
	switch {
	case errors.Is(err, discord.ErrTokenRefused):
		d.fail("discord token refused: "+err.Error(), "set discord.token (or discord.token_file) to the bot token of the Developer Portal")
	case err != nil:
		d.fail("discord: "+err.Error(), "check the network path to Discord (discord.api_url)")
	default:
		d.pass("discord token accepted (%s)", bot.Username)
	}
	d.checkAllowlist("discord", len(dc.AllowedUsers)+len(dc.AllowedRoles),
		fmt.Sprintf("%d user(s), %d role(s)", len(dc.AllowedUsers), len(dc.AllowedRoles)),
		"set discord.allowed_users or discord.allowed_roles")
}

func (d *doctor) checkAllowlist(platform string, n int, detail, fix string) {
	if n == 0 {
		d.fail(platform+" allowlist is empty: nobody may talk to the bot", fix)
		return
	}
	d.pass("%s allowlist: %s", platform, detail)
}

// getJSON GETs u and decodes a JSON body (an error status may have none).
func (d *doctor) getJSON(ctx context.Context, u string, out any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
	return resp.StatusCode, nil
}

// checkListen passes when api.listen is free, or held by a gatewayd (its
// /healthz answers with gatewayd's JSON, ready or not).
func (d *doctor) checkListen(ctx context.Context, addr string) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		ln.Close()
		d.pass("api.listen %s is free", addr)
		return
	}
	var body struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	}
	status, herr := d.getJSON(ctx, "http://"+addr+"/healthz", &body)
	if herr == nil && (body.Status == "ok" || body.Status == "unavailable") {
		detail := body.Status
		if body.Reason != "" {
			detail += ": " + body.Reason
		}
		d.pass("api.listen %s is held by a running gatewayd (/healthz %d %s)", addr, status, detail)
		return
	}
	d.fail(fmt.Sprintf("api.listen %s is in use by another program: %v", addr, err),
		"stop that program or set api.listen to a free address")
}

// checkPostgres is doctor's database check on PostgreSQL: the server
// answers, and the schema is one this binary runs on. PostgreSQL checks
// its own pages; there is no quick_check to run.
func (d *doctor) checkPostgres(ctx context.Context, dsn string) {
	h, err := store.InspectPostgres(ctx, dsn)
	if err != nil {
		d.fail(fmt.Sprintf("database (postgres): %v", err),
			"check store.dsn, that the server runs and that the role may connect to the database")
		return
	}
	d.pass("database: postgres %s reachable", h.Server)
	d.checkSchema(h)
}
