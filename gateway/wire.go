package gateway

import (
	"context"
	"errors"

	"github.com/gatewayd/gatewayd/gateway/outbox"
)

// New builds a gateway: the shared parts first (lane table, outbox, inbox,
// journal, the modules' host), then the features, then the core that runs
// them, then every module's registration. Platforms are added with
// AddPlatform before Run.
func New(cfg Config, st Store, cx Codex) (*Gateway, error) {
	if st == nil || cx == nil {
		return nil, errors.New("gateway: store and codex are required")
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	g := newShell(cfg, st, cx)
	busy := &busyPolicy{mode: cfg.BusyMode, cx: cx, out: g.out, log: g.log, base: g.baseCtx, callTimeout: steerTimeout}
	wireFeatures(g)
	wireCore(g, busy)
	for _, m := range modules(g) {
		m.register(g.host)
	}
	if err := registerFeatures(g); err != nil {
		return nil, err
	}
	if err := g.host.commands.Check(); err != nil {
		return nil, err
	}
	return g, nil
}

// newShell is the Gateway with the parts every other part shares.
func newShell(cfg Config, st Store, cx Codex) *Gateway {
	log := cfg.Logger.Named("gateway")
	platforms := make(map[string]Platform)
	base, cancelBase := context.WithCancel(context.Background())
	g := &Gateway{
		baseCtx:    base,
		cancelBase: cancelBase,
		cfg:        cfg,
		log:        log,
		st:         st,
		cx:         cx,
		obs:        cfg.Observer,
		now:        cfg.Now,
		newTicker:  realTicker,
		platforms:  platforms,
		lanes:      newLaneTable(),
		runDone:    make(chan struct{}),
		ready:      make(chan struct{}),
		out:        outbox.NewCourier(st, platforms, cfg.Files, log, cfg.Observer, cfg.Now),
		host:       newHost(),
		inbox:      inbox{st: st, log: log},
		journal:    journal{st: st, log: log},
	}
	g.present = &presenter{platforms: platforms, base: base, previewInterval: cfg.PreviewInterval,
		typingInterval: cfg.TypingInterval, ticker: &g.newTicker, obs: cfg.Observer, log: log, now: cfg.Now}
	return g
}

// wireFeatures builds the feature modules that the core calls into.
func wireFeatures(g *Gateway) {
	cfg := g.cfg
	g.places = newPlaces(cfg)
	g.host.requests.settings = requestSettings(cfg)
}

// wireCore builds the thread cache, the turn runner, the scheduler and
// the parts that act on lanes, each given only what it uses.
func wireCore(g *Gateway, busy *busyPolicy) {
	cfg, st, cx, log, base := g.cfg, g.st, g.cx, g.log, g.baseCtx
	g.threads = &threadCache{lanes: g.lanes, cx: cx, log: log, now: cfg.Now, maxLive: cfg.MaxLive, idleEvict: cfg.IdleEvict}
	g.turns = &turnRunner{base: base, st: st, cx: cx, host: g.host, out: g.out, threads: g.threads, inbox: g.inbox,
		journal: g.journal, log: log, obs: cfg.Observer, now: cfg.Now, thread: cfg.Thread, turnTimeout: cfg.TurnTimeout, notifyAfter: cfg.NotifyAfter,
		stream: g.present.newStreamer, superseded: busy.interruptIfSuperseded,
		dropPreview: previewDropper{platforms: g.platforms, obs: cfg.Observer, log: log}.drop, replies: cfg.Replies}
	g.sched = &scheduler{base: base, lanes: g.lanes, platforms: g.platforms, cx: cx, out: g.out,
		inbox: g.inbox, journal: g.journal, log: log, obs: cfg.Observer, now: cfg.Now,
		queueLimit: cfg.QueueLimit, busyMode: cfg.BusyMode, drainTimeout: cfg.DrainTimeout,
		process: g.turns.process, hold: g.host.hold, trimLive: g.threads.trimLive,
		endFiles: releaseFiles(cfg.Files), sem: make(chan struct{}, cfg.MaxConcurrentTurns)}
	g.in = &intake{base: base, st: st, lanes: g.lanes, sched: g.sched, host: g.host, out: g.out, inbox: g.inbox,
		files: cfg.Files, platforms: g.platforms, log: log, obs: cfg.Observer, now: cfg.Now,
		paused: g.host.holding, busy: busy.input, steerEdit: busy.steerEdit}
	g.triggers = &triggerServices{in: g.in, gate: func() LaneGate { return g.gate }}
	g.loader = &threadLoader{st: st, cx: cx, threads: g.threads, turns: g.turns, host: g.host, obs: cfg.Observer,
		thread: cfg.Thread, laneDir: g.places.workDir}
	g.controls = &controls{st: st, cx: cx, lanes: g.lanes, sched: g.sched, threads: g.threads, host: g.host,
		out: g.out, inbox: g.inbox, log: log, now: cfg.Now, callTimeout: steerTimeout,
		describeProject: g.places.describe, retryAfterLimit: g.host.retried}
	g.recovery = &recovery{st: st, lanes: g.lanes, sched: g.sched, in: g.in, out: g.out, inbox: g.inbox,
		journal: g.journal, log: log, autoRetry: cfg.AutoRetryCutOff, replies: cfg.Replies}
	g.cluster = &ClusterLanes{base: base, st: st, lanes: g.lanes, sched: g.sched, threads: g.threads, in: g.in,
		recovery: g.recovery, inbox: g.inbox, log: log, interrupt: g.controls.interrupt}
}

// modules are the features, in the order their hooks run.
func modules(g *Gateway) []module {
	return []module{g.controls}
}
