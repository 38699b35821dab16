// Package plan is /plan [text] and /plan off: the lane's turns run in
// codex's Plan mode (turn/start collaborationMode), where the model plans
// with the user and may ask questions before it acts.
package plan

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// The choice is kept with the lane like /verbose, across /new, restarts
// and eviction (the lane row's Mode). Codex keeps a thread's mode for its
// later turns, so once a lane chose, every turn names its mode: "default"
// after /plan off undoes it.

// Store is the part of the store Plan mode uses.
type Store interface {
	SetLaneOption(ctx context.Context, sessionKey string, opt store.LaneOption, value string) error
}

var _ Store = (*store.Store)(nil)

// Mode is the /plan command and the mode it gives a lane's turns.
type Mode struct {
	st   Store
	host ext.Host
	log  *zap.Logger
}

// New is Plan mode, the lanes' choices kept in st.
func New(st Store) *Mode { return &Mode{st: st} }

// Name is the feature's name.
func (p *Mode) Name() string { return "plan" }

// Register adds /plan, names the lane's mode on its turns (after the core
// chose the turn's model, which collaborationMode requires) and adds the
// /status line.
func (p *Mode) Register(h ext.Host) error {
	p.host, p.log = h, h.Logger()
	h.Command(ext.Command{Name: "plan", Args: "[text|off]",
		Description: "Plan first: Codex asks before it acts, until /plan off", Menu: true, Run: p.command})
	h.OnInput(p.input)
	h.OnStatus(p.status)
	return nil
}

func (p *Mode) command(ctx context.Context, c ext.Call) bool {
	args := strings.TrimSpace(c.Args)
	mode := codex.ModePlan
	if strings.EqualFold(args, "off") {
		mode = codex.ModeDefault
	}
	addr := c.Lane.Address()
	if err := p.st.SetLaneOption(ctx, c.Lane.Key(), store.OptionMode, mode); err != nil {
		p.log.Error("plan.set_failed", zap.String("lane", c.Lane.Key()), zap.Error(err))
		p.host.Notify(ctx, addr, c.MsgID, "Could not change Plan mode: the database refused; nothing changed. Try again.")
		return true
	}
	p.log.Info("plan.mode", zap.String("lane", c.Lane.Key()), zap.String("mode", mode))
	switch {
	case mode == codex.ModeDefault:
		p.host.Notify(ctx, addr, c.MsgID, "Plan mode is off: Codex acts on your messages again.")
		return true
	case args == "":
		p.host.Notify(ctx, addr, c.MsgID, "Plan mode is on: Codex plans with you and asks before it acts. /plan off ends it.")
		return true
	}
	c.QueueTurn(ctx, args, nil)
	return false // the turn closes the inbound row
}

// input names the lane's mode on every turn of a lane that chose one.
func (p *Mode) input(_ context.Context, t ext.Turn, in *codex.TurnInput) {
	mode := t.Row().Mode
	if mode == "" {
		return
	}
	if in.Model == "" {
		// collaborationMode requires a model; codex named none.
		p.log.Warn("plan.no_model", zap.String("lane", t.Lane().Key()), zap.String("mode", mode))
		return
	}
	in.Mode = mode
}

func (p *Mode) status(_ context.Context, sl store.Lane, b *strings.Builder) {
	if sl.Mode == codex.ModePlan {
		fmt.Fprintf(b, "Plan mode: on (/plan off ends it)\n")
	}
}
