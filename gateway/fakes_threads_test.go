package gateway

import (
	"context"
	"errors"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// The thread operations of the coding commands (/undo, /review, /fork,
// /btw, /threads) are tested against the real app-server
// (*_integration_test.go); the in-process fake refuses them, which the
// commands must report as a failure.
var errFakeThreadOp = errors.New("fake codex: thread operation not faked")

func (c *fakeCodex) Turns(context.Context, string) ([]codex.TurnSummary, error) {
	return nil, errFakeThreadOp
}

func (c *fakeCodex) RevertThread(context.Context, string, string) error { return errFakeThreadOp }

func (c *fakeCodex) RunReview(context.Context, string, codex.ReviewTarget, codex.TurnEvents) (codex.TurnResult, error) {
	return codex.TurnResult{}, errFakeThreadOp
}

func (c *fakeCodex) ForkThread(context.Context, string, codex.ForkConfig) (string, error) {
	return "", errFakeThreadOp
}
