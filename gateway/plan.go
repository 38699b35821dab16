package gateway

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// /plan [text] and /plan off: the lane's turns run in codex's
// Plan mode (turn/start collaborationMode), where the model plans with the
// user and may ask questions (questions.go) before it acts. The choice is
// kept with the lane like /verbose, across /new, restarts and eviction.
// Codex keeps a thread's mode for its later turns, so once a lane chose,
// every turn names its mode: "default" after /plan off undoes it.

type planStore interface {
	SetLaneOption(ctx context.Context, sessionKey string, opt store.LaneOption, value string) error
}

type planMode struct {
	st  planStore
	out *deliverer
	log *zap.Logger
	// enqueue queues /plan TEXT's turn (scheduler.enqueue); set by register's caller.
	enqueue func(ctx context.Context, l *lane, it item)
}

func (p *planMode) register(h *host) {
	h.command("plan", p.command)
	h.hooks.input = append(h.hooks.input, p.input)
	h.hooks.status = append(h.hooks.status, p.status)
}

func (p *planMode) command(ctx context.Context, c commandCall) bool {
	args := strings.TrimSpace(c.args)
	mode := codex.ModePlan
	if strings.EqualFold(args, "off") {
		mode = codex.ModeDefault
	}
	if err := p.st.SetLaneOption(ctx, c.lane.key, store.OptionMode, mode); err != nil {
		p.log.Error("plan.set_failed", zap.String("lane", c.lane.key), zap.Error(err))
		p.out.notify(ctx, c.lane.addr, c.msgID, "Could not change Plan mode: the database refused; nothing changed. Try again.")
		return true
	}
	p.log.Info("plan.mode", zap.String("lane", c.lane.key), zap.String("mode", mode))
	switch {
	case mode == codex.ModeDefault:
		p.out.notify(ctx, c.lane.addr, c.msgID, "Plan mode is off: Codex acts on your messages again.")
		return true
	case args == "":
		p.out.notify(ctx, c.lane.addr, c.msgID, "Plan mode is on: Codex plans with you and asks before it acts. /plan off ends it.")
		return true
	}
	p.enqueue(ctx, c.lane, item{kind: itemTurn, inboundID: c.inboundID, msgID: c.msgID, text: args, requester: c.sender,
		requesterName: c.senderName})
	return false // the turn closes the inbound row
}

// input names the lane's mode on every turn of a lane that chose one.
func (p *planMode) input(_ context.Context, t *turn, in *codex.TurnInput) {
	mode := t.sl.Mode
	if mode == "" {
		return
	}
	if in.Model == "" {
		// collaborationMode requires a model; codex named none.
		p.log.Warn("plan.no_model", zap.String("lane", t.l.key), zap.String("mode", mode))
		return
	}
	in.Mode = mode
}

func (p *planMode) status(_ context.Context, sl store.Lane, b *strings.Builder) {
	if sl.Mode == codex.ModePlan {
		fmt.Fprintf(b, "Plan mode: on (/plan off ends it)\n")
	}
}
