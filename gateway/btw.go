package gateway

import (
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// /btw QUESTION: a side question answered with the lane's
// context without entering it. An ephemeral fork of the lane's thread
// (thread/fork, ephemeral: in codex's memory only, no rollout) takes the
// question and is released after the answer, so the lane's thread, its
// transcript and its next request never see either. It waits its turn in
// the lane's queue: a thread cannot be forked in the middle of a turn.

const sideAnswerPrefix = "Side answer (not part of this conversation's thread):\n\n"

type sideQuestions struct {
	st interface {
		Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	}
	cx     sideRuntime
	loader *threadLoader
	sched  *scheduler
	out    *deliverer
	inbox  inbox
	log    *zap.Logger
}

// sideRuntime is what /btw uses of codex.
type sideRuntime interface {
	ForkThread(ctx context.Context, parentID string, cfg codex.ForkConfig) (string, error)
	RunTurn(ctx context.Context, threadID string, in codex.TurnInput, ev codex.TurnEvents) (codex.TurnResult, error)
	Release(ctx context.Context, threadID string) error
}

var _ sideRuntime = (*codex.Client)(nil)

func (s *sideQuestions) register(h *host) {
	h.command("btw", func(ctx context.Context, c commandCall) bool {
		if c.args == "" {
			s.out.notify(ctx, c.lane.addr, c.msgID, "Usage: /btw QUESTION — answered with this conversation's context, without adding to it.")
			return true
		}
		s.sched.enqueue(ctx, c.lane, item{kind: itemTask, inboundID: c.inboundID, msgID: c.msgID, text: c.args, task: s.run})
		return false // the task closes the inbound row
	})
}

func (s *sideQuestions) run(ctx context.Context, l *lane, it item) {
	defer s.inbox.set(ctx, it.inboundID, store.InboundDone)
	s.out.notify(ctx, l.addr, it.msgID, s.answer(ctx, l, it.text))
}

// answer asks question on an ephemeral fork of the lane's thread.
func (s *sideQuestions) answer(ctx context.Context, l *lane, question string) string {
	thread, err := s.loader.load(ctx, l)
	if errors.Is(err, ErrNoThread) {
		return "This conversation has no Codex thread yet, so there is no context to ask beside: send the question as a message."
	}
	if err != nil {
		s.log.Warn("btw.load_failed", zap.String("lane", l.key), zap.Error(err))
		return "Could not open this conversation's Codex thread (" + briefError(err) + ")."
	}
	sl, err := s.st.Lane(ctx, l.key)
	if err != nil {
		return storeErrorNotice
	}
	cfg := s.loader.config(sl)
	fork, err := s.cx.ForkThread(ctx, thread, codex.ForkConfig{Thread: cfg, Ephemeral: true})
	if err != nil {
		s.log.Warn("btw.fork_failed", zap.String("lane", l.key), zap.Error(err))
		return "Could not ask beside this conversation: Codex did not fork its thread (" + briefError(err) + ")."
	}
	defer func() {
		if err := s.cx.Release(context.WithoutCancel(ctx), fork); err != nil {
			s.log.Warn("btw.release_failed", zap.String("lane", l.key), zap.String("thread", fork), zap.Error(err))
		}
	}()
	res, err := s.cx.RunTurn(ctx, fork, codex.TurnInput{Text: question, Cwd: cfg.Cwd, Confine: cfg.Confine}, codex.TurnEvents{})
	if err != nil {
		s.log.Warn("btw.turn_failed", zap.String("lane", l.key), zap.Error(err))
		return "The side question failed: " + briefError(err)
	}
	return sideAnswerPrefix + strings.TrimSpace(replyText(res))
}
