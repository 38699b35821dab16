// Package daemon is gatewayd's run command behind the CLI: it builds the
// store, the codex app-server client, the gateway, the platforms and, on
// PostgreSQL, the cluster node from the loaded configuration, runs them
// until the context ends and closes them in order. Package main keeps the
// argument parsing, the logger, the signals and the exit codes.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/lifecycle"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/compact"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
	"github.com/gatewayd/gatewayd/gateway/feature/schedules"
	"github.com/gatewayd/gatewayd/gateway/feature/usage"
	"github.com/gatewayd/gatewayd/gateway/feature/voice"
	"github.com/gatewayd/gatewayd/gateway/features"
	"github.com/gatewayd/gatewayd/gateway/replyspool"
	"github.com/gatewayd/gatewayd/metrics"
	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/matrix"
	"github.com/gatewayd/gatewayd/platforms/slack"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/webconsole"
	"github.com/gatewayd/gatewayd/worktree"
)

var _ gateway.Observer = (*metrics.Metrics)(nil)

// CloseTimeout bounds closing the app-server after the gateway drained.
const CloseTimeout = 15 * time.Second

// Params is what Run needs from the command line.
type Params struct {
	Config  *config.Config
	Options config.Options  // how Config was loaded; SIGHUP loads it again
	Reload  <-chan struct{} // a receive per SIGHUP
	Log     *zap.Logger
	// Version is this build's version; PinnedCodexVersion the codex
	// release it was verified with (both for the status page).
	Version            string
	PinnedCodexVersion string
}

// daemon holds what Run built, for orderly closing.
type daemon struct {
	cfg      *config.Config
	version  string
	pinned   string
	log      *zap.Logger
	metrics  *metrics.Metrics
	store    *store.Store
	cluster  clusterMember // cluster mode (store.driver postgres); none on SQLite (cluster.go)
	codex    *codex.Client
	gateway  *gateway.Gateway
	api      *api.Platform
	chats    []gateway.Platform
	health   *lifecycle.Health
	notifier *lifecycle.Notifier
	webhooks webhookListener // webhooks.listen; none when off (webhooks.go)
	pool     *worktree.Pool  // worktrees.pool; nil when off (worktrees.go)
	account  accountLink     // the account feature, when it is in the list (account.go)
}

// Run builds everything, runs until ctx ends and shuts down in order:
// stop intake and drain (Gateway.Run returns), close the app-server, close
// the store.
//
// The codex client is built before the gateway (which calls into it) but
// started only after the gateway is built and its handlers are bound to
// the client, so no app-server request arrives before its handler exists.
func Run(ctx context.Context, p Params) error {
	cfg, log := p.Config, p.Log
	d := &daemon{cfg: cfg, version: p.Version, pinned: p.PinnedCodexVersion, log: log, metrics: metrics.New()}
	d.metrics.SetVersion(d.version)
	log.Info("daemon.starting", zap.String("version", d.version), zap.String("state_dir", cfg.StateDir),
		zap.String("config_file", cfg.File))
	if err := d.preflight(); err != nil {
		return err
	}
	warnIsolation(cfg, log)
	if err := d.cluster.join(ctx, cfg, log, d.metrics); err != nil {
		return err
	}
	defer d.cluster.leave()
	if err := d.openStore(ctx); err != nil {
		return err
	}
	defer d.closeStore()
	if err := d.resetSpool(); err != nil {
		return err
	}
	if err := d.newCodex(); err != nil {
		return err
	}
	if err := d.buildGateway(); err != nil {
		return err
	}
	if err := d.webhooks.listen(cfg.Webhooks, d.gateway, d.store, d.metrics, log); err != nil {
		return err
	}
	defer d.webhooks.stop()
	if err := d.startCodex(ctx); err != nil {
		return err
	}
	defer d.closeCodex()
	d.account.check(ctx, log)
	d.notifier = lifecycle.NewNotifier(lifecycle.NotifierConfig{Probe: d.probe, Logger: log.Named("sdnotify")})
	err := d.run(ctx, p.Options, p.Reload)
	// The gateway has drained: leave the cluster before the app-server and
	// the store close, so the other nodes take the lanes meanwhile.
	d.cluster.leave()
	return err
}

// preflight checks what would otherwise fail later with a worse message,
// and creates the directories the daemon writes to.
func (d *daemon) preflight() error {
	if err := CheckRuntime(d.cfg); err != nil {
		return err
	}
	dirs := []string{d.cfg.StateDir, d.cfg.Codex.Cwd}
	if d.cfg.Codex.IsolatesLanes() {
		dirs = append(dirs, tempRoot(d.cfg))
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("gatewayd: create %s: %w", dir, err)
		}
	}
	return nil
}

// CheckRuntime validates what depends on this machine or this build rather
// than on the file alone; check-config and doctor run it too. (The
// enumerated keys, such as lanes.busy_mode, are config.Load's to check.)
func CheckRuntime(cfg *config.Config) error {
	if err := singleNodePlatforms(cfg); err != nil {
		return err
	}
	if !strings.ContainsRune(cfg.Codex.Command, '/') {
		// As the app-server is started: PATH, or the package's bundled codex.
		if _, err := codex.ResolveCommand(cfg.Codex.Command); err != nil {
			return &config.Error{Key: "codex.command",
				Msg: fmt.Sprintf("%q not found on PATH (install @openai/codex or set an absolute path)", cfg.Codex.Command)}
		}
	} else if _, err := os.Stat(cfg.Codex.Command); err != nil {
		return &config.Error{Key: "codex.command", Msg: fmt.Sprintf("%q does not exist", cfg.Codex.Command)}
	}
	return nil
}

func (d *daemon) openStore(ctx context.Context) error {
	opts := store.Options{Logger: d.log.Named("store")}
	if d.cluster.node != nil {
		opts.Cluster = d.cluster.node.StoreOptions()
	}
	st, err := OpenStore(ctx, d.cfg, opts)
	if err != nil {
		return fmt.Errorf("gatewayd: open store: %w", err)
	}
	d.store = st
	d.log.Info("store.opened", zap.String("driver", st.Driver()), zap.String("path", st.Path()))
	return nil
}

// resetSpool creates <state_dir>/spool, private, and empties it of what a
// daemon killed mid-upload left. Only now that the store is open: its lock
// (the SQLite file's, or PostgreSQL's single-node lock; cluster nodes each
// have a state_dir of their own) keeps a second daemon on this state
// directory from getting this far, so nothing in the spool is a running
// daemon's.
func (d *daemon) resetSpool() error {
	dir := d.cfg.SpoolDir()
	n, size, err := files.ResetSpool(dir)
	if err != nil {
		return fmt.Errorf("gatewayd: prepare the upload spool: %w", err)
	}
	d.log.Info("spool.cleaned", zap.String("dir", dir), zap.Int("files", n), zap.Int64("bytes", size))
	return nil
}

func (d *daemon) closeStore() {
	if err := d.store.Close(); err != nil {
		d.log.Error("store.close_failed", zap.Error(err))
		return
	}
	d.log.Info("store.closed")
}

// ChildEnv blanks what the app-server, and so the agent's commands, must
// not inherit: systemd's notify socket is for this process only, and the
// GATEWAYD_* variables carry the bot and API tokens.
func ChildEnv(environ []string) []string {
	env := []string{"NOTIFY_SOCKET=", "WATCHDOG_USEC=", "WATCHDOG_PID="}
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, config.EnvPrefix+"_") {
			env = append(env, name+"=")
		}
	}
	return env
}

func (d *daemon) rateLimitsUpdated(r codex.RateLimits) {
	for _, w := range r.Windows {
		d.metrics.RateLimitUsed(w.Name, w.UsedPercent)
	}
}

// newCodex builds the app-server client; no process runs until startCodex.
// Its request handlers are the gateway's, bound in bindCodex.
func (d *daemon) newCodex() error {
	c := d.cfg.Codex
	args, err := CodexArgs(d.cfg)
	if err != nil {
		return fmt.Errorf("gatewayd: start codex app-server: %w", err)
	}
	cx, err := codex.New(codex.Options{
		Command:       c.Command,
		Args:          args,
		Home:          c.Home,
		Env:           ChildEnv(os.Environ()),
		Dir:           c.Cwd,
		StartTimeout:  c.StartTimeout,
		ResumeTimeout: c.ResumeTimeout,
		TurnTimeout:   c.TurnTimeout,
		MaxProcesses:  c.MaxProcesses,
		MaxFileSize:   c.MaxFileSize,
		// The account's windows go straight to the gauges; the gateway
		// reads the same snapshot from the client when it needs it.
		RateLimitsUpdated: d.rateLimitsUpdated,
		Logger:            d.log.Named("codex"),
		ClientVersion:     d.version,
	})
	if err != nil {
		return fmt.Errorf("gatewayd: start codex app-server: %w", err)
	}
	d.codex = cx
	return nil
}

// startCodex spawns the app-server, once bindCodex gave it the handlers.
func (d *daemon) startCodex(ctx context.Context) error {
	if err := d.codex.Start(ctx); err != nil {
		return fmt.Errorf("gatewayd: start codex app-server: %w", err)
	}
	d.log.Info("codex.started", zap.String("command", d.cfg.Codex.Command))
	return nil
}

func (d *daemon) closeCodex() {
	ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
	defer cancel()
	if err := d.codex.Close(ctx); err != nil {
		d.log.Error("codex.close_failed", zap.Error(err))
		return
	}
	d.log.Info("codex.closed")
}

// declineApproval answers the approval requests no lane can be asked
// about (codex.approvals is never, or chat approvals unsupported).
func (d *daemon) declineApproval(_ context.Context, req codex.ApprovalRequest) codex.Decision {
	d.log.Warn("approval.declined", zap.String("kind", req.Kind), zap.String("thread", req.ThreadID),
		zap.String("reason", "no approval route (codex.approvals is never, or chat approvals unsupported)"))
	return codex.DecisionDecline
}

// bindCodex routes the app-server's requests and notifications to the
// gateway: approvals (codex.approvals: chat), refused requests, the dynamic
// tools (send_file) and the account's updates. It runs before startCodex,
// so no request arrives before its handler; the client refuses a late
// Handle.
func (d *daemon) bindCodex(gw *gateway.Gateway) error {
	h := codex.Handlers{Approvals: d.declineApproval, Unsupported: gw.Unsupported, ToolCall: gw.ToolCall, UserInput: gw.AskUser,
		OnAccount: d.account.updated, OnLogin: d.account.loginCompleted}
	if d.cfg.Codex.Approvals == "chat" {
		h.Approvals = gw.Approve
	}
	if err := d.codex.Handle(h); err != nil {
		return fmt.Errorf("gatewayd: bind codex handlers: %w", err)
	}
	return nil
}

func (d *daemon) threadConfig() codex.ThreadConfig {
	// chat: "untrusted" makes codex ask before any command that is not
	// known safe (docs/codex-app-server.md §10.1); never: codex never asks, the sandbox decides.
	policy := "never"
	if d.cfg.Codex.Approvals == gateway.ApprovalsChat {
		policy = "untrusted"
	}
	return codex.ThreadConfig{Cwd: d.cfg.Codex.Cwd, Model: d.cfg.Codex.Model, Sandbox: d.cfg.Codex.Sandbox, ApprovalPolicy: policy}
}

// gatewayConfig is the gateway's Config from the loaded configuration:
// the one place a gateway.Config is built from it, so every value comes
// from config's key table (or its constants for behaviour that is not a
// key) and gateway.New fills in nothing.
func (d *daemon) gatewayConfig(fstore *files.Store) gateway.Config {
	lanes := d.cfg.Lanes
	return gateway.Config{
		MaxLive: lanes.MaxLive, IdleEvict: lanes.IdleEvict, QueueLimit: lanes.QueueLimit,
		MaxConcurrentTurns: lanes.MaxConcurrentTurns, BusyMode: lanes.BusyMode,
		Features: features.List(features.Settings{Rotate: lanes.Rotate, MaxPerMinute: lanes.MaxPerMinute,
			Budget:    usage.BudgetOf(lanes.BudgetTokensPerDay, lanes.Timezone),
			DiskQuota: lanes.DiskQuota, Voice: voice.Config{URL: d.cfg.Voice.TranscribeURL, APIKey: d.cfg.Voice.APIKey,
				Model: d.cfg.Voice.Model, Timeout: d.cfg.Voice.Timeout},
			CodexHome: CodexHome(d.cfg), Projects: projects.Settings{Projects: d.cfg.Projects, Pool: d.pool},
			Schedules: schedules.Config{MinInterval: d.cfg.Schedules.MinInterval, CatchUp: d.cfg.Schedules.CatchUp,
				MaxPerLane: d.cfg.Schedules.MaxPerLane, Timezone: lanes.Timezone, Fired: d.metrics.ScheduleFired},
			Model: d.cfg.Codex.Model, Effort: d.cfg.Codex.Effort,
			CodexLogin: codexLogin(d.cfg.Codex.Command), Verbose: lanes.Verbose,
			Compact:      compact.Config{At: lanes.CompactAt, CooldownTurns: config.DefaultCompactCooldownTurns},
			GroupContext: lanes.GroupContext, ContextMessages: lanes.ContextMessages}, d.store, d.codex),
		Approvals: d.cfg.Codex.Approvals, ApprovalTimeout: d.cfg.Codex.ApprovalTimeout,
		QuestionTimeout: d.cfg.Codex.QuestionTimeout,
		TurnTimeout:     d.cfg.Codex.TurnTimeout,
		Thread:          d.threadConfig(), AutoRetryCutOff: lanes.AutoRetryCutOff,
		Worktrees:   worktreesDir(d.cfg),
		NotifyAfter: lanes.NotifyAfter,
		Approvers:   d.cfg.Codex.Approvers, AllowEscalation: d.cfg.Codex.AllowEscalation,
		Admins: map[string][]string{telegram.PlatformName: d.cfg.Telegram.Admins, discord.PlatformName: d.cfg.Discord.Admins,
			slack.PlatformName: d.cfg.Slack.Admins, matrix.PlatformName: d.cfg.Matrix.Admins},
		DrainTimeout: d.cfg.Shutdown.DrainTimeout,
		Files:        fstore,
		Replies:      replyspool.New(d.cfg.RepliesDir(), d.log),
		Isolation:    gatewayIsolation(d.cfg),
		Logger:       d.log, Observer: d.metrics,
		PreviewInterval: config.DefaultPreviewInterval,
		TypingInterval:  config.DefaultTypingInterval,
	}
}

func (d *daemon) buildGateway() error {
	fstore := d.filesStore()
	d.pool = worktreePool(d.cfg)
	cfg := d.gatewayConfig(fstore)
	gw, err := gateway.New(cfg, timedStore{Store: d.store, m: d.metrics}, d.codex)
	if err != nil {
		return fmt.Errorf("gatewayd: %w", err)
	}
	d.gateway = gw
	d.account = accountLink{feature: accountOf(cfg.Features)}
	if c := d.cluster.node; c != nil {
		c.Attach(d.store, gw.Cluster())
		gw.SetLaneGate(c)
	}
	if err := d.bindCodex(gw); err != nil {
		return err
	}
	d.health = lifecycle.NewHealth(d.healthProbe, 0)
	if c := d.cluster.node; c != nil {
		d.health.SetCluster(c.Health)
	}
	dirs := webconsole.NewWorkdirs(d.cfg)
	handlers := map[string]http.Handler{
		api.HealthPath: d.health,
		"/metrics":     d.metricsHandler(),
		webconsole.AdminPrefix: webconsole.NewAdmin(daemonBackend{st: d.store, gw: gw}, d.cfg.API.Token, dirs).
			WithPrune(func(ctx context.Context) ([]string, error) { return PruneWorktrees(ctx, d.cfg, d.store, time.Now()) }),
	}
	maps.Copy(handlers, webconsole.NewConsole(webconsole.ConsoleConfig{
		Store: d.store, Live: gw, Token: d.cfg.API.Token, Dirs: dirs, Status: d.statusSources(), Models: modelsOf(cfg.Features),
		Tools: toolsOf(cfg.Features), Goals: goalsOf(cfg.Features), Account: d.account.console(),
	}).Routes())
	maps.Copy(handlers, webconsole.Routes())
	d.api = api.New(api.Config{
		Listen: d.cfg.API.Listen, Token: d.cfg.API.Token, Logger: d.log, Answers: d.store,
		Approvals: gw, Questions: gw, Deliveries: gw,
		AllowGroup: d.cfg.API.AllowGroup, Public: d.publicPaths(),
		AllowedHosts: d.cfg.API.AllowedHosts, AllowedOrigins: d.cfg.API.AllowedOrigins,
		MaxConnections: d.cfg.API.MaxConnections, MaxFileBytes: d.cfg.Files.MaxBytes, Files: fstore,
		SpoolDir: d.cfg.SpoolDir(), MaxSpoolBytes: d.cfg.Files.SpoolMaxBytes,
		Handlers: handlers, SharedAnswers: d.cluster.node != nil, Relay: d.cluster.relay(),
	})
	d.cluster.shareAnswers(d.api, gw)
	gw.AddPlatform(d.api)
	chats, err := chatPlatformsGated(d.cfg, d.store, gw.Commands(), d.log, d.cluster.pollGate(), d.cluster.discordShardSets(d.cfg))
	if err != nil {
		return err
	}
	for _, p := range chats {
		gw.AddPlatform(p)
		d.log.Info("platform.enabled", zap.String("platform", p.Name()))
	}
	d.chats = chats
	d.metrics.Bind(metrics.Sources{
		LiveLanes:         func() int { return gw.Stats().LiveLanes },
		QueuedMessages:    func() int { return gw.Stats().QueuedMessages },
		RunningTurns:      func() int { return gw.Stats().RunningTurns },
		StoreQueueDepth:   d.store.QueueDepth,
		AppServerRestarts: d.codex.Restarts,
		Schedules:         d.countSchedules,
	})
	return nil
}

// countSchedules is the schedules gauge, read at scrape time; -1 when the
// database does not answer within a second.
func (d *daemon) countSchedules() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, _, err := d.store.CountSchedules(ctx)
	if err != nil {
		return -1
	}
	return n
}

// metricsHandler is /metrics: behind api.token like the API, since the
// numbers tell an outsider how busy the agent is and what it runs, unless
// api.metrics_public serves them to a scraper that cannot send the token.
func (d *daemon) metricsHandler() http.Handler {
	if d.cfg.API.MetricsPublic {
		return d.metrics.Handler()
	}
	return api.RequireToken(d.cfg.API.Token, d.metrics.Handler())
}

// publicPaths are answered to every local user without the token: /healthz
// (a liveness probe tells nothing), and /metrics with api.metrics_public.
func (d *daemon) publicPaths() []string {
	if d.cfg.API.MetricsPublic {
		return []string{api.HealthPath, "/metrics"}
	}
	return []string{api.HealthPath}
}

// filesStore keeps inbound attachments under <state_dir>/files. A lane's
// files still needed by a message not yet processed (received or
// processing in the inbox), and its out copies still to be delivered
// (pending outbox rows), are never pruned for its quota.
func (d *daemon) filesStore() *files.Store {
	inUse := func(lane string) []string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rows, err := d.store.PendingInbound(ctx)
		if err != nil {
			d.log.Warn("files.in_use_unknown", zap.String("lane", lane), zap.Error(err))
		}
		var ids []string
		for _, r := range rows {
			if r.SessionKey == lane && len(r.Attachments) > 0 {
				ids = append(ids, r.MessageID)
			}
		}
		return ids
	}
	outInUse := func(lane string) ([]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		paths, err := d.store.PendingOutboxFiles(ctx, lane)
		if err != nil {
			d.log.Warn("files.out_in_use_unknown", zap.String("lane", lane), zap.Error(err))
		}
		return paths, err
	}
	fs := files.New(d.cfg.FilesDir(), files.Limits{MaxBytes: d.cfg.Files.MaxBytes, LaneQuota: d.cfg.Files.LaneQuota}, inUse)
	fs.SetOutInUse(outInUse)
	return fs
}

// probe is the health check behind WATCHDOG=1 and /healthz.
func (d *daemon) probe(ctx context.Context) error {
	if err := d.store.Ping(ctx); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := d.codex.Ping(ctx); err != nil {
		return fmt.Errorf("codex: %w", err)
	}
	return nil
}

// run drives the gateway: readiness, watchdog, SIGHUP, and the stop.
//
// The gateway's context ends when run stops it, not with parent: on a
// signal the webhook listener closes first, so the deliveries in flight
// are still taken, then the gateway drains.
func (d *daemon) run(parent context.Context, opts config.Options, hup <-chan struct{}) error {
	ctx, stopGateway := context.WithCancel(context.WithoutCancel(parent))
	defer stopGateway()
	runErr := make(chan error, 1)
	go func() { runErr <- d.gateway.Run(ctx) }()
	superseded := d.cluster.superseded()
	var exitErr error
	d.cluster.run(ctx, d.gateway.Ready())
	go pruneWorktreesDaily(ctx, d.cfg, d.store, d.log.Named("worktrees"))
	go fillPool(ctx, d.pool, d.cfg, d.log.Named("worktrees"))
	wd := &watchdog{}
	defer wd.stop()
	ready := d.gateway.Ready()
	stopping := parent.Done()
	for {
		select {
		case <-ready:
			ready = nil
			d.health.SetReady()
			d.notifier.Ready()
			wd.start(d.notifier)
			d.webhooks.serve()
			d.log.Info("daemon.ready", zap.String("api", d.api.Addr()))
		case <-hup:
			d.log.Info("config.reload", zap.String("signal", "SIGHUP"))
			reloadAllowlists(opts, d.chats, d.log)
		case <-superseded:
			superseded, exitErr = nil, ErrSuperseded
			if stopping != nil {
				stopping, ready = nil, nil
				d.beginStop("superseded", wd)
			}
			stopGateway()
		case <-stopping:
			stopping = nil
			// A platform connecting during the drain must not announce a
			// stopping daemon as ready (READY/WATCHDOG after STOPPING).
			ready = nil
			d.beginStop("signal", wd)
			stopGateway()
		case err := <-runErr:
			if exitErr != nil {
				return exitErr
			}
			if stopping != nil { // the gateway stopped on its own: a failure
				ready = nil
				d.beginStop("gateway stopped", wd)
			}
			if err != nil {
				return fmt.Errorf("gatewayd: %w", err)
			}
			if ctx.Err() == nil {
				return errors.New("gatewayd: gateway stopped unexpectedly")
			}
			return nil
		}
	}
}

// beginStop reports the stop: /healthz turns 503, the watchdog pings end
// and STOPPING=1 is the last state systemd hears.
func (d *daemon) beginStop(why string, wd *watchdog) {
	d.log.Info("shutdown.begin", zap.String("reason", why), zap.Duration("drain_timeout", d.cfg.Shutdown.DrainTimeout))
	d.health.SetNotReady("shutting down")
	wd.stop()
	d.notifier.Stopping()
	d.webhooks.stop()
}

// watchdog runs the notifier's ping loop and stops it synchronously, so no
// WATCHDOG=1 can follow STOPPING=1.
type watchdog struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *watchdog) start(n *lifecycle.Notifier) {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go func() { defer close(w.done); n.Watchdog(ctx) }()
}

func (w *watchdog) stop() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	<-w.done
	w.cancel = nil
}

// daemonBackend serves the admin routes: reads from the store, resets
// through the gateway so a live lane is reset exactly like /reset.
type daemonBackend struct {
	st *store.Store
	gw *gateway.Gateway
}

func (b daemonBackend) Lanes(ctx context.Context, limit int) ([]store.Lane, error) {
	return b.st.Lanes(ctx, limit)
}
func (b daemonBackend) Lane(ctx context.Context, key string) (store.Lane, error) {
	return b.st.Lane(ctx, key)
}
func (b daemonBackend) Transcript(ctx context.Context, key string, limit int) ([]store.Message, error) {
	return b.st.Transcript(ctx, key, limit)
}
func (b daemonBackend) LaneUsagePeriods(ctx context.Context, key, sender string, at time.Time, loc *time.Location) (store.UsagePeriods, error) {
	return b.st.LaneUsagePeriods(ctx, key, sender, at, loc)
}
func (b daemonBackend) Search(ctx context.Context, query string, limit int) ([]store.Message, error) {
	return b.st.Search(ctx, query, limit)
}
func (b daemonBackend) Reset(ctx context.Context, key string) error { return b.gw.ResetLane(ctx, key) }

// statusSources binds the status page to the running daemon.
func (d *daemon) statusSources() *webconsole.StatusSources {
	return &webconsole.StatusSources{
		Health: d.health.Check, Codex: d.codex, Stats: d.gateway.Stats, Store: d.store,
		Metrics: d.metrics.Registry(), Version: d.version, PinnedCodexVersion: d.pinned,
		Started: time.Now(), Now: time.Now,
	}
}

// timedStore measures commit latency for the metrics without the store
// knowing about them.
type timedStore struct {
	*store.Store
	m *metrics.Metrics
}

func (s timedStore) CommitTurn(ctx context.Context, t store.CompletedTurn) (store.CommitResult, error) {
	start := time.Now()
	res, err := s.Store.CommitTurn(ctx, t)
	s.m.StoreCommit(time.Since(start))
	return res, err
}

// codexLogin is the codex command the operator logs in with: "codex", or
// the package's bundled binary by its path when that is what runs (it is
// not on PATH). An operator who set codex.command knows their binary.
func codexLogin(command string) string {
	if bin, err := codex.ResolveCommand(command); err == nil && bin == codex.BundledCommand {
		return bin
	}
	return codex.DefaultCommand
}
