package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

// extHost is the host as one feature package sees it (ext.Host): the
// registrations go into the core's host, the services come from the
// gateway's shared parts. Each feature gets its own, named for it.
type extHost struct {
	h      *host
	out    *deliverer
	admins approverRule
	base   context.Context
	log    *zap.Logger
	now    func() time.Time
}

var _ ext.Host = (*extHost)(nil)

// registerFeatures registers the feature packages of cfg.Features with
// the host, in order.
func registerFeatures(g *Gateway) error {
	for _, f := range g.cfg.Features {
		eh := &extHost{h: g.host, out: g.out, admins: newApproverRule(g.cfg), base: g.baseCtx,
			log: g.log.Named(f.Name()), now: g.cfg.Now}
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
		e.h.add(info, nil) // refused: check reports it
		return
	}
	e.h.add(info, func(ctx context.Context, call commandCall) bool {
		return run(ctx, ext.Call{Lane: call.lane, Name: call.name, Args: call.args, InboundID: call.inboundID,
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
	e.h.hooks.session = append(e.h.hooks.session, func(ctx context.Context, t *turn) { fn(ctx, t) })
}

func (e *extHost) OnStatus(fn func(ctx context.Context, sl store.Lane, b *strings.Builder)) {
	e.h.hooks.status = append(e.h.hooks.status, fn)
}

func (e *extHost) Notify(ctx context.Context, addr chat.Address, replyTo, text string) {
	e.out.notify(ctx, addr, replyTo, text)
}

func (e *extHost) IsAdmin(in chat.Inbound) bool {
	return in.SenderAdmin || e.admins.admins[in.Address.Platform][in.SenderID]
}

func (e *extHost) Context() context.Context { return e.base }
func (e *extHost) Logger() *zap.Logger      { return e.log }
func (e *extHost) Now() time.Time           { return e.now() }

// What a feature sees of a lane (ext.Lane).
var _ ext.Lane = (*lane)(nil)

func (l *lane) Key() string           { return l.key }
func (l *lane) Address() chat.Address { return l.addr }
func (l *lane) RetireThread()         { l.retireThread() }

// What a feature sees of a turn (ext.Turn).
var _ ext.Turn = (*turn)(nil)

func (t *turn) Lane() ext.Lane       { return t.l }
func (t *turn) Row() store.Lane      { return t.sl }
func (t *turn) SetRow(sl store.Lane) { t.sl = sl }
