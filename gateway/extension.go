package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/outbox"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// extHost is the host as one feature package sees it (ext.Host): the
// registrations go into the core's host, the services come from the
// gateway's shared parts. Each feature gets its own, named for it. Like
// ext.Host it is made of one part per hook family, each in the
// extension_<part>.go file of its family; what is left here are the
// commands, the intake and status hooks, notices and places.
type extHost struct {
	*extCore
	extWorkHooks
	extPlaceHooks
	extTriggers
	extServerRequests
	extChoices
	extWorkViewHooks
	extCommandHooks
	extUsageHooks
	log *zap.Logger
}

// newExtHost is the host of the feature whose logger is log, its parts
// all on core.
func newExtHost(core *extCore, log *zap.Logger) *extHost {
	return &extHost{extCore: core, extWorkHooks: extWorkHooks{core}, extPlaceHooks: extPlaceHooks{core},
		extTriggers: extTriggers{core}, extServerRequests: extServerRequests{core}, extChoices: extChoices{core},
		extWorkViewHooks: extWorkViewHooks{core}, extCommandHooks: extCommandHooks{core},
		extUsageHooks: extUsageHooks{core}, log: log}
}

// extCore are the core's parts behind the extension API, shared by the
// features' hosts and the lanes and turns they are shown.
type extCore struct {
	h      *host
	out    *outbox.Courier
	admins approverRule
	base   context.Context
	now    func() time.Time
	sched  *scheduler
	loader *threadLoader
	inbox  inbox
	// platforms are the gateway's, filled by AddPlatform before Run.
	platforms map[string]Platform
	places    *places // where lanes work (extension_projects.go)
	threads   *threadCache
	cx        interface {
		EnsureThread(ctx context.Context, storedID string, cfg codex.ThreadConfig) (codex.Ensured, error)
	}
	// work are the services of a turn's work (extension_work.go).
	work workServices
	// triggers are the services of turns no one typed (extension_triggers.go).
	triggers *triggerServices
	// views are the work view's and command buttons' (extension_workview.go).
	views workViewServices
	// usage are the services of the usage hooks (extension_usage.go).
	usage         usageServices
	roomServices  // ext.RoomHooks (extension_room.go)
	titleServices // ext.TitleHooks (extension_title.go)
	nameServices  // ext.NameHooks (extension_names.go)
}

var _ ext.Host = (*extHost)(nil)

// registerFeatures registers the feature packages of cfg.Features with
// the host, in order.
func registerFeatures(g *Gateway) error {
	core := &extCore{h: g.host, out: g.out, admins: newApproverRule(g.cfg), base: g.baseCtx, now: g.cfg.Now,
		sched: g.sched, loader: g.loader, inbox: g.inbox, platforms: g.platforms,
		places: g.places, threads: g.threads, cx: g.cx, work: newWorkServices(g), views: newWorkViewServices(g),
		usage: newUsageServices(g)}
	core.triggers = g.triggers
	core.roomServices = roomServices{h: g.host, gate: g.triggers.gate}
	core.titleServices = titleServices{h: g.host}
	core.nameServices = nameServices{h: g.host, platforms: g.platforms}
	for _, f := range g.cfg.Features {
		eh := newExtHost(core, g.log.Named(f.Name()))
		if err := f.Register(eh); err != nil {
			return fmt.Errorf("gateway: feature %s: %w", f.Name(), err)
		}
	}
	return nil
}

// Command registers c with the host's commands, after the core's.
func (e *extHost) Command(c ext.Command) {
	info := CommandInfo{Name: c.Name, Args: c.Args, Description: c.Description, Menu: c.Menu}
	run := c.Run
	if run == nil {
		e.h.commands.Add(info, nil) // refused: Check reports it
		return
	}
	e.h.commands.Add(info, func(ctx context.Context, call commandCall) bool {
		return run(ctx, ext.Call{Lane: e.lane(call.lane), Name: call.name, Args: call.args, InboundID: call.inboundID,
			MsgID: call.msgID, Sender: call.sender, SenderName: call.senderName})
	})
}

func (e *extHost) Callback(prefix string, fn func(ctx context.Context, in chat.Inbound)) {
	e.h.callback(prefix, fn)
}

func (e *extHost) OnAdmit(fn func(ctx context.Context, in chat.Inbound) (bool, error)) {
	e.h.hooks.admit = append(e.h.hooks.admit, fn)
}

func (e *extHost) OnSession(fn func(ctx context.Context, t ext.Turn)) {
	e.h.hooks.session = append(e.h.hooks.session, func(ctx context.Context, t *turn) { fn(ctx, e.turn(t)) })
}

func (e *extHost) OnStatus(fn func(ctx context.Context, sl store.Lane, b *strings.Builder)) {
	e.h.hooks.status = append(e.h.hooks.status, fn)
}

func (e *extHost) Notify(ctx context.Context, addr chat.Address, replyTo, text string) {
	e.out.Notify(ctx, addr, replyTo, text)
}

func (e *extHost) NotifyFork(ctx context.Context, addr chat.Address, replyTo, text string, f ext.Fork) {
	row := outbox.Notice(addr, replyTo, text)
	row.ForkLane, row.ThreadID = f.Lane, f.ThreadID
	e.out.Post(ctx, addr, row)
}

// CanOpenPlace reports whether the platform runs here: every platform
// opens places (Platform.OpenPlace), and says itself where it cannot.
func (e *extHost) CanOpenPlace(platform string) bool {
	_, ok := e.platforms[platform]
	return ok
}

func (e *extHost) OpenPlace(ctx context.Context, near chat.Address, title string) (chat.Address, error) {
	p, ok := e.platforms[near.Platform]
	if !ok {
		return chat.Address{}, fmt.Errorf("gateway: %s is not running", near.Platform)
	}
	return p.OpenPlace(ctx, near, title)
}

func (e *extHost) SendFile(ctx context.Context, addr chat.Address, replyTo string, f ext.File) error {
	return e.out.SendData(ctx, addr, replyTo, f)
}

func (e *extHost) IsAdmin(in chat.Inbound) bool {
	return in.SenderAdmin || e.admins.admins[in.Address.Platform][in.SenderID]
}

func (e *extHost) ThreadConfig(sl store.Lane) codex.ThreadConfig { return e.loader.config(sl) }

func (e *extHost) ProjectDir(sl store.Lane) string { return e.places.projectDir(sl) }
func (e *extHost) WorkDir(sl store.Lane) string    { return e.places.workDir(sl) }

func (e *extHost) Context() context.Context { return e.base }
func (e *extHost) Logger() *zap.Logger      { return e.log }
func (e *extHost) Now() time.Time           { return e.now() }

// extLane is what a feature sees of a lane (ext.Lane).
type extLane struct {
	l    *lane
	core *extCore
}

var _ ext.Lane = extLane{}

func (c *extCore) lane(l *lane) ext.Lane { return extLane{l: l, core: c} }

func (x extLane) Key() string           { return x.l.key }
func (x extLane) Address() chat.Address { return x.l.addr }
func (x extLane) RetireThread()         { x.l.live.retire() }

func (x extLane) LoadThread(ctx context.Context) (string, error) { return x.core.loader.load(ctx, x.l) }
func (x extLane) MidWork() bool                                  { return x.l.snapshot().midWork() }

// Queue queues w as the lane's next turn or task; a task's inbound row
// is closed as done when it returns, as the core's own tasks close theirs.
func (x extLane) Queue(ctx context.Context, w ext.Work) {
	it := item{kind: itemTurn, inboundID: w.InboundID, msgID: w.MsgID, text: w.Text, review: w.Review,
		requester: w.Requester, requesterName: w.RequesterName}
	if task := w.Task; task != nil {
		inbox := x.core.inbox
		it.kind, it.task = itemTask, func(ctx context.Context, _ *lane, it item) {
			defer inbox.set(ctx, it.inboundID, store.InboundDone)
			task(ctx)
		}
	}
	x.core.sched.enqueue(ctx, x.l, it)
}

// AdoptThread resumes and binds the thread id as the lane's under the
// lane's thread lock, so no turn or eviction loads or releases its thread
// meanwhile.
func (x extLane) AdoptThread(ctx context.Context, id string, cfg codex.ThreadConfig, bind func(ctx context.Context) error) (codex.Ensured, error) {
	l, threads := x.l, x.core.threads
	l.opMu.Lock()
	defer l.opMu.Unlock()
	en, err := x.core.cx.EnsureThread(ctx, id, cfg)
	if err != nil {
		return en, err
	}
	if en.Outcome == codex.OutcomeReplaced || en.Outcome == codex.OutcomeStarted {
		threads.release(ctx, l.key, en.ThreadID, "attach refused")
		return en, nil
	}
	if err := bind(ctx); err != nil {
		threads.release(ctx, l.key, id, "attach refused")
		return en, err
	}
	old := l.snapshot().thread
	threads.markLive(ctx, l, id)
	if old != "" && old != id {
		threads.release(ctx, l.key, old, "attach")
	}
	return en, nil
}

// ReleaseThread releases the lane's loaded thread and takes the lane out
// of the live count. A release that failed is logged and returned: the
// app-server may still be the thread's writer.
func (x extLane) ReleaseThread(ctx context.Context, why string) error {
	l, threads := x.l, x.core.threads
	l.opMu.Lock()
	defer l.opMu.Unlock()
	loaded := l.snapshot().thread
	if loaded == "" {
		return nil
	}
	l.live.set("", 0)
	threads.lanes.unlive(l)
	if err := threads.unload(ctx, l.key, loaded, why); err != nil {
		threads.log.Warn("thread.release_failed", zap.String("lane", l.key), zap.String("thread", loaded), zap.Error(err))
		return fmt.Errorf("gateway: release %s: %w", loaded, err)
	}
	return nil
}

// extTurn is what a feature sees of a turn (ext.Turn).
type extTurn struct {
	t    *turn
	core *extCore
}

var _ ext.Turn = extTurn{}

// turn is the features' view of t. The hooks that take a turn all run in
// its lane's worker, so the first of them makes the view without a lock.
func (c *extCore) turn(t *turn) ext.Turn {
	if t.view.t == nil {
		t.view, t.laneView = extTurn{t: t, core: c}, extLane{l: t.l, core: c}
	}
	return &t.view
}

func (x extTurn) Lane() ext.Lane       { return &x.t.laneView }
func (x extTurn) Row() store.Lane      { return x.t.sl }
func (x extTurn) SetRow(sl store.Lane) { x.t.sl = sl }
