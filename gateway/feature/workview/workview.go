// Package workview is the work view: while a turn runs, one silent status
// message shows Codex's plan and its last few actions, edited in place,
// and collapses to one summary line before the reply goes out. /verbose
// sets a lane's mode (off, summary, full); lanes.verbose is the mode of
// lanes that chose none.
package workview

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

// Store is the part of the store /verbose uses.
type Store interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	SetLaneOption(ctx context.Context, sessionKey string, opt store.LaneOption, value string) error
}

var _ Store = (*store.Store)(nil)

// Feature is the work view: each lane's mode (/verbose, else
// lanes.verbose) and the status message of its turns in that mode.
type Feature struct {
	defaultMode string // lanes.verbose: the mode of lanes that chose none
	st          Store
	host        ext.Host
	log         *zap.Logger
}

// New is the work view with defaultMode for lanes that chose none ("":
// config's default), the lanes' choices kept in st.
func New(defaultMode string, st Store) *Feature {
	if defaultMode == "" {
		defaultMode = config.Defaults().Lanes.Verbose
	}
	return &Feature{defaultMode: defaultMode, st: st}
}

// Name is the feature's name.
func (f *Feature) Name() string { return "workview" }

// Register adds /verbose and watches every turn; a default mode config
// would refuse is an error.
func (f *Feature) Register(h ext.Host) error {
	if err := config.CheckVerbose(f.defaultMode); err != nil {
		return fmt.Errorf("workview: %w", err)
	}
	f.host, f.log = h, h.Logger()
	h.Command(ext.Command{Name: "verbose", Args: "[off|summary|full]",
		Description: "Show or set how much of Codex's work is shown while it runs", Menu: true,
		Run: func(ctx context.Context, c ext.Call) bool {
			h.Notify(ctx, c.Lane.Address(), c.MsgID, f.command(ctx, c.Lane.Key(), c.Args))
			return true
		}})
	h.OnWatch(f.watch)
	return nil
}

// watch starts the work view of a turn in its lane's mode; nil when the
// mode is off or the lane's platform is not running.
func (f *Feature) watch(t ext.Turn, replyTo string, started time.Time) ext.TurnWatcher {
	v := f.start(t.Lane().Address(), replyTo, f.modeOf(t.Row()), started)
	if v == nil {
		return nil // a nil *view in the interface would not be nil
	}
	return v
}

// modeOf is the lane's work view mode: its own choice, else the default.
func (f *Feature) modeOf(sl store.Lane) string {
	if validVerbose(sl.Verbose) {
		return sl.Verbose
	}
	return f.defaultMode
}

func validVerbose(mode string) bool {
	for _, m := range config.VerboseModes {
		if m == mode {
			return true
		}
	}
	return false
}

// command shows the lane's work view mode (no argument) or sets it; an
// unknown mode is refused with the valid ones and nothing is stored.
func (f *Feature) command(ctx context.Context, key, arg string) string {
	mode := strings.ToLower(strings.TrimSpace(arg))
	if mode == "" {
		sl, err := f.st.Lane(ctx, key)
		if err != nil {
			f.log.Warn("verbose.lane_failed", zap.String("lane", key), zap.Error(err))
			return "Could not read this conversation's work view setting (storage error)."
		}
		current := f.modeOf(sl)
		if !validVerbose(sl.Verbose) {
			current += " (the default)"
		}
		return "Work view: " + current + ". Set it with /verbose " + strings.Join(config.VerboseModes, "|") + "."
	}
	if !validVerbose(mode) {
		return fmt.Sprintf("Unknown work view mode %q: use one of %s.", arg, strings.Join(config.VerboseModes, ", "))
	}
	if err := f.st.SetLaneOption(ctx, key, store.OptionVerbose, mode); err != nil {
		f.log.Warn("verbose.store_failed", zap.String("lane", key), zap.Error(err))
		return "Could not save the work view setting (storage error). Please try again."
	}
	f.log.Info("lane.verbose_set", zap.String("lane", key), zap.String("mode", mode))
	return "Work view: " + mode + " " + verboseMeaning(mode) + ", from the next message on."
}

func verboseMeaning(mode string) string {
	switch mode {
	case config.VerboseOff:
		return "(no status message)"
	case config.VerboseFull:
		return "(plan, actions, reasoning summaries and command output)"
	}
	return "(plan and one line per action)"
}
