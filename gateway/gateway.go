package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatewayd/gatewayd/gateway/outbox"
	"github.com/gatewayd/gatewayd/gateway/replyspool"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// Observer receives metrics events. Implementations must be fast and safe
// for concurrent use.
type Observer interface {
	Inbound(platform string)
	Duplicate(platform string)
	TurnFinished(status string, d time.Duration)
	Resume(outcome string)
	Outbound(platform string, err error)
	PlatformError(platform, kind string)
	// Tokens counts a turn's spend of one kind (input, cached, output,
	// reasoning).
	Tokens(platform, kind string, n int64)
}

// NopObserver ignores every event.
type NopObserver struct{}

func (NopObserver) Inbound(string)                     {}
func (NopObserver) Duplicate(string)                   {}
func (NopObserver) TurnFinished(string, time.Duration) {}
func (NopObserver) Resume(string)                      {}
func (NopObserver) Outbound(string, error)             {}
func (NopObserver) PlatformError(string, string)       {}
func (NopObserver) Tokens(string, string, int64)       {}

// Busy modes: what a message arriving while the lane's turn runs does.
const (
	BusyQueue     = config.BusyQueue     // it waits in the lane's queue
	BusyInterrupt = config.BusyInterrupt // it interrupts the running turn and runs next
	BusySteer     = config.BusySteer     // it is added to the running turn (turn/steer)
)

// Config tunes the gateway. New takes every value as given: the daemon
// builds it from the loaded configuration, and a Config built by hand
// takes the defaults noted from WithDefaults. Zero means never or off
// where the config key the field mirrors says so (IdleEvict).
type Config struct {
	MaxLive            int           // live Codex threads kept loaded (lanes.max_live)
	IdleEvict          time.Duration // release a thread idle this long (0 = never, as lanes.idle_evict)
	QueueLimit         int           // messages waiting per lane (lanes.queue_limit)
	MaxConcurrentTurns int           // turns running at once over all lanes (lanes.max_concurrent_turns)
	BusyMode           string        // "queue" | "interrupt" | "steer" (lanes.busy_mode)
	// Approvals (codex.approvals): "chat" asks the lane (Approve); "never"
	// lets the sandbox decide. ApprovalTimeout
	// declines an unanswered request (codex.approval_timeout).
	Approvals       string
	ApprovalTimeout time.Duration
	// AllowEscalation is codex.allow_escalation: a request that widens a
	// lane's boundary (outside the sandbox, a grantRoot outside its
	// roots) is asked, of admins only and for once only; false declines it.
	AllowEscalation bool
	// QuestionTimeout gives up an unanswered question of Codex's
	// (codex.question_timeout).
	QuestionTimeout time.Duration
	// Approvers is codex.approvers (requester | anyone; default
	// requester) and Admins the user ids, per platform, who may decide any
	// approval (telegram.admins, discord.admins).
	Approvers string
	Admins    map[string][]string
	Thread    codex.ThreadConfig
	// Isolation confines each lane's commands to its own directories
	// (codex.isolation: lanes); the zero value leaves them unconfined.
	Isolation Isolation
	// Worktrees, when set, is where lanes on a git project get a worktree
	// of their own (lanes.worktrees: <state_dir>/worktrees), under each
	// lane's ext.LaneDirs.Worktrees; "" lets them work in the project's
	// checkout.
	Worktrees string
	// NotifyAfter is lanes.notify_after: a turn that ran longer ends with
	// a new message notifying its requester (0: never).
	NotifyAfter time.Duration
	// Files stores inbound attachments (<state_dir>/files); nil refuses
	// every file with a reply, the rest of the message still runs.
	Files *files.Store
	// Replies keeps the result of a turn whose commit waits for the
	// database, so a crash meanwhile loses no answer (the daemon's is
	// <state_dir>/replies); nil keeps it in memory only.
	Replies *replyspool.Spool
	// TurnTimeout is codex.turn_timeout, named in the notice of a turn the
	// watchdog stopped (the runtime enforces it).
	TurnTimeout     time.Duration
	AutoRetryCutOff bool          // rerun a turn cut off by a restart once, instead of asking
	DrainTimeout    time.Duration // on shutdown, wait this long for running turns (shutdown.drain_timeout)
	PreviewInterval time.Duration // minimum time between streamed preview edits (default config.DefaultPreviewInterval)
	TypingInterval  time.Duration // typing indicator refresh (default config.DefaultTypingInterval)
	Logger          *zap.Logger
	Now             func() time.Time
	Observer        Observer
	// Features are the feature packages, registered in order after the
	// core's own parts; the daemon lists them (gateway/feature/...).
	Features []ext.Feature
}

// check rejects a Config New cannot run with: the enumerated values by
// config's rules, and the counts and durations that have no "off". New
// fills no defaults: the daemon sets every field from the loaded
// configuration, and a Config built by hand starts from WithDefaults.
// A nil Logger, Now or Observer is a no-op logger, the wall clock and no
// metrics: dependencies, not configuration.
func (c *Config) check() error {
	for _, n := range []struct {
		field string
		value int
	}{
		{"MaxLive", c.MaxLive}, {"QueueLimit", c.QueueLimit}, {"MaxConcurrentTurns", c.MaxConcurrentTurns},
	} {
		if n.value < 1 {
			return fmt.Errorf("gateway: Config.%s must be at least 1, got %d", n.field, n.value)
		}
	}
	for _, d := range []struct {
		field string
		value time.Duration
	}{
		{"ApprovalTimeout", c.ApprovalTimeout}, {"QuestionTimeout", c.QuestionTimeout},
		{"DrainTimeout", c.DrainTimeout},
		{"PreviewInterval", c.PreviewInterval}, {"TypingInterval", c.TypingInterval},
	} {
		if d.value <= 0 {
			return fmt.Errorf("gateway: Config.%s must be greater than zero, got %s", d.field, d.value)
		}
	}
	for _, err := range []error{
		config.CheckBusyMode(c.BusyMode),
		config.CheckApprovals(c.Approvals),
		config.CheckApprovers(c.Approvers),
	} {
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	return nil
}

// WithDefaults is c with every field New requires that was left unset
// (zero or negative, or "") taken from config's key table
// (config.Defaults) and config's constants for behaviour that is not a
// key. The fields whose zero means off (IdleEvict,
// NotifyAfter...) are left as they
// are. It is for a Config built by hand (tests, tools); the daemon sets
// every field from the loaded configuration instead.
func (c Config) WithDefaults() Config {
	d := config.Defaults()
	setDefault(&c.MaxLive, d.Lanes.MaxLive)
	setDefault(&c.QueueLimit, d.Lanes.QueueLimit)
	setDefault(&c.MaxConcurrentTurns, d.Lanes.MaxConcurrentTurns)
	setDefault(&c.BusyMode, d.Lanes.BusyMode)
	setDefault(&c.ApprovalTimeout, d.Codex.ApprovalTimeout)
	setDefault(&c.QuestionTimeout, d.Codex.QuestionTimeout)
	setDefault(&c.Approvals, d.Codex.Approvals)
	setDefault(&c.Approvers, d.Codex.Approvers)
	setDefault(&c.DrainTimeout, d.Shutdown.DrainTimeout)
	setDefault(&c.PreviewInterval, config.DefaultPreviewInterval)
	setDefault(&c.TypingInterval, config.DefaultTypingInterval)
	return c
}

// setDefault sets a field left unset (empty, zero or negative) to def.
func setDefault[T int | time.Duration | string](field *T, def T) {
	var unset T
	if *field <= unset {
		*field = def
	}
}

// ErrShuttingDown is returned by Deliver once the gateway stops taking
// messages; the adapter must not acknowledge the message.
var ErrShuttingDown = errors.New("gateway: shutting down")

// Stats is a snapshot for metrics and /status.
type Stats struct {
	LiveLanes      int // lanes whose thread is loaded in the app-server
	QueuedMessages int // messages waiting behind a running turn
	RunningTurns   int
	ActiveLanes    int // lanes with a worker (a turn running or about to)
}

// ticker abstracts time.Ticker so tests drive periodic work.
type tickerFunc func(d time.Duration) (c <-chan time.Time, stop func())

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Gateway routes inbound messages to per-lane Codex threads.
type Gateway struct {
	cfg       Config
	log       *zap.Logger
	st        Store
	cx        Codex
	obs       Observer
	now       func() time.Time
	newTicker tickerFunc

	platforms map[string]Platform

	mu       sync.Mutex // guards cancelRun
	lanes    *laneTable
	sched    *scheduler    // the lanes' workers, turn slots and drain
	threads  *threadCache  // which lanes' threads are loaded; eviction
	turns    *turnRunner   // what a worker does with an item
	in       *intake       // a platform's message from Deliver to its lane
	controls *controls     // the lane's own commands
	places   *places       // where lanes work: the feature that places them, or the defaults
	loader   *threadLoader // loads a lane's thread for the commands that act on it
	recovery *recovery     // what the last stop cut short
	cluster  *ClusterLanes // cluster mode: takeovers, claimed rows, step-downs
	present  *presenter    // the running turns' streamers

	// baseCtx is the context of store and codex work: it outlives intake
	// until the drain is over and ends when Run returns. Made in New, so
	// every part can hold it from the start.
	baseCtx    context.Context
	cancelBase context.CancelFunc
	cancelRun  context.CancelFunc
	runDone    chan struct{}
	started    atomic.Bool
	ready      chan struct{}

	out  *outbox.Courier // the outbox's sender
	gate LaneGate        // cluster mode: which lanes this node serves (cluster.go)

	host    *host // what the modules registered: commands, buttons, hooks
	inbox   inbox
	journal journal

	triggers *triggerServices // turns no one typed, and the features' loops (ext.Triggers)
}

// AddPlatform registers an adapter. Call it before Run.
func (g *Gateway) AddPlatform(p Platform) {
	if g.started.Load() {
		g.log.Error("platform.add_after_run", zap.String("platform", p.Name()))
		return
	}
	g.platforms[p.Name()] = p
}

// Ready is closed once start-up recovery queued its notices and every
// platform is ready.
func (g *Gateway) Ready() <-chan struct{} { return g.ready }

// Stats returns a snapshot of the router.
func (g *Gateway) Stats() Stats {
	return Stats{
		LiveLanes:      g.lanes.live(),
		QueuedMessages: int(g.sched.queued.Load()),
		RunningTurns:   int(g.sched.running.Load()),
		ActiveLanes:    int(g.sched.active.Load()),
	}
}

// Run recovers cut-off turns and pending messages, runs the platforms, the
// outbox deliverer and idle eviction until ctx ends, then stops intake,
// drains running turns for up to DrainTimeout, interrupts the rest (they stay
// journaled, so the next start tells their lanes), flushes the outbox and
// returns.
func (g *Gateway) Run(ctx context.Context) error {
	if !g.started.CompareAndSwap(false, true) {
		return errors.New("gateway: Run called twice")
	}
	defer close(g.runDone)
	base := g.baseCtx
	defer g.cancelBase()
	ctx, cancel := context.WithCancel(ctx)
	g.mu.Lock()
	g.cancelRun = cancel
	g.mu.Unlock()
	defer cancel()

	if err := g.out.ReleaseHeld(base); err != nil {
		return err
	}
	g.host.start(base) // before recovery queues the waiting messages (a usage pause)
	if g.gate == nil { // in cluster mode each lane recovers as it is taken
		if err := g.recovery.all(base); err != nil {
			return err
		}
	}
	platCtx, stopPlatforms := context.WithCancel(base)
	var bg sync.WaitGroup
	platErr := make(chan error, len(g.platforms))
	for _, p := range g.platforms {
		bg.Add(1)
		go func() {
			defer bg.Done()
			if err := p.Run(platCtx, g); err != nil && platCtx.Err() == nil {
				g.obs.PlatformError(p.Name(), "run")
				g.log.Error("platform.stopped", zap.String("platform", p.Name()), zap.Error(err))
				platErr <- fmt.Errorf("gateway: platform %s: %w", p.Name(), err)
			}
		}()
	}
	go g.awaitReady(platCtx)
	loopCtx, stopLoops := context.WithCancel(base)
	var loops sync.WaitGroup
	loops.Add(2)
	tick, stopTick := g.newTicker(time.Second) // retries that come due
	defer stopTick()
	go func() { defer loops.Done(); g.out.Loop(loopCtx, tick) }()
	go func() { defer loops.Done(); g.threads.loop(loopCtx, g.newTicker) }()
	g.triggers.run(loopCtx, g.newTicker, &loops) // the features' loops (ext.Triggers.Every)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-platErr:
	}
	g.sched.drain(base)
	stopLoops()
	loops.Wait()
	g.out.Flush(base)
	stopPlatforms()
	bg.Wait()
	return runErr
}

// Shutdown stops Run as if its context ended and waits for it to return.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	cancel := g.cancelRun
	g.mu.Unlock()
	if cancel == nil {
		return errors.New("gateway: not running")
	}
	cancel()
	select {
	case <-g.runDone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("gateway: shutdown: %w", ctx.Err())
	}
}

func (g *Gateway) awaitReady(ctx context.Context) {
	for _, p := range g.platforms {
		select {
		case <-p.Ready():
		case <-ctx.Done():
			return
		}
	}
	close(g.ready)
}

// EvictIdle releases the threads of lanes idle for IdleEvict or longer and
// returns how many it released. The eviction loop calls it periodically;
// tests call it after moving the injected clock.
func (g *Gateway) EvictIdle(ctx context.Context) int { return g.threads.evictIdle(ctx) }

// Deliver records an inbound message and queues it on its lane (Sink). It
// returns once the message is durably recorded, or recognised as a
// duplicate, one recorded before.
func (g *Gateway) Deliver(ctx context.Context, in Inbound) (duplicate bool, err error) {
	return g.in.deliver(ctx, in)
}

// ResetLane does what /reset does in the lane: a new generation and session,
// the binding cleared, the queue dropped, a running turn interrupted (its
// late result is discarded) and the old thread released.
func (g *Gateway) ResetLane(ctx context.Context, sessionKey string) error {
	return g.controls.resetByKey(ctx, sessionKey)
}
