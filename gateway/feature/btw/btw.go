// Package btw is /btw QUESTION: a side question answered with the lane's
// context without entering it.
package btw

import (
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// An ephemeral fork of the lane's thread (thread/fork, ephemeral: in
// codex's memory only, no rollout) takes the question and is released
// after the answer, so the lane's thread, its transcript and its next
// request never see either. It waits its turn in the lane's queue: a
// thread cannot be forked in the middle of a turn.

const answerPrefix = "Side answer (not part of this conversation's thread):\n\n"

// Store is the part of the store /btw uses.
type Store interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
}

var _ Store = (*store.Store)(nil)

// Runtime is what /btw uses of codex.
type Runtime interface {
	ForkThread(ctx context.Context, parentID string, cfg codex.ForkConfig) (string, error)
	RunTurn(ctx context.Context, threadID string, in codex.TurnInput, ev codex.TurnEvents) (codex.TurnResult, error)
	Release(ctx context.Context, threadID string) error
}

var _ Runtime = (*codex.Client)(nil)

// SideQuestions is the /btw command.
type SideQuestions struct {
	st   Store
	cx   Runtime
	host ext.Host
	log  *zap.Logger
}

// New is /btw over st and cx.
func New(st Store, cx Runtime) *SideQuestions { return &SideQuestions{st: st, cx: cx} }

// Name is the feature's name.
func (s *SideQuestions) Name() string { return "btw" }

// Register adds /btw.
func (s *SideQuestions) Register(h ext.Host) error {
	s.host, s.log = h, h.Logger()
	h.Command(ext.Command{Name: "btw", Args: "QUESTION",
		Description: "Ask a side question with this conversation's context, without adding to it", Run: s.run})
	return nil
}

func (s *SideQuestions) run(ctx context.Context, c ext.Call) bool {
	if c.Args == "" {
		s.host.Notify(ctx, c.Lane.Address(), c.MsgID, "Usage: /btw QUESTION — answered with this conversation's context, without adding to it.")
		return true
	}
	c.QueueTask(ctx, func(ctx context.Context) {
		s.host.Notify(ctx, c.Lane.Address(), c.MsgID, s.answer(ctx, c.Lane, c.Args))
	})
	return false // the task closes the inbound row
}

// answer asks question on an ephemeral fork of the lane's thread.
func (s *SideQuestions) answer(ctx context.Context, l ext.Lane, question string) string {
	thread, err := l.LoadThread(ctx)
	if errors.Is(err, ext.ErrNoThread) {
		return "This conversation has no Codex thread yet, so there is no context to ask beside: send the question as a message."
	}
	if err != nil {
		s.log.Warn("btw.load_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not open this conversation's Codex thread (" + ext.BriefError(err) + ")."
	}
	sl, err := s.st.Lane(ctx, l.Key())
	if err != nil {
		return ext.StoreErrorNotice
	}
	cfg := s.host.ThreadConfig(sl)
	fork, err := s.cx.ForkThread(ctx, thread, codex.ForkConfig{Thread: cfg, Ephemeral: true})
	if err != nil {
		s.log.Warn("btw.fork_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not ask beside this conversation: Codex did not fork its thread (" + ext.BriefError(err) + ")."
	}
	defer func() {
		if err := s.cx.Release(context.WithoutCancel(ctx), fork); err != nil {
			s.log.Warn("btw.release_failed", zap.String("lane", l.Key()), zap.String("thread", fork), zap.Error(err))
		}
	}()
	res, err := s.cx.RunTurn(ctx, fork, codex.TurnInput{Text: question, Cwd: cfg.Cwd, Confine: cfg.Confine}, codex.TurnEvents{})
	if err != nil {
		s.log.Warn("btw.turn_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "The side question failed: " + ext.BriefError(err)
	}
	return answerPrefix + strings.TrimSpace(ext.ReplyText(res))
}
