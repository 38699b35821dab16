package slack

import (
	"context"
	"errors"

	"github.com/gatewayd/gatewayd/gateway"
)

// errNotYet marks the capabilities still being built on this branch.
var errNotYet = errors.New("slack: not implemented yet")

func (a *Adapter) Send(ctx context.Context, out gateway.Outbound) (string, error) {
	return "", errNotYet
}
func (a *Adapter) Edit(ctx context.Context, addr gateway.Address, messageID, text string) error {
	return errNotYet
}
func (a *Adapter) SendFile(ctx context.Context, out gateway.Outbound) (string, error) {
	return "", errNotYet
}
func (a *Adapter) OpenPlace(ctx context.Context, near gateway.Address, title string) (gateway.Address, error) {
	return gateway.Address{}, errNotYet
}
func (a *Adapter) Delete(ctx context.Context, addr gateway.Address, messageID string) error {
	return errNotYet
}
func (a *Adapter) Typing(ctx context.Context, addr gateway.Address) error { return nil }
func (a *Adapter) SendButtons(ctx context.Context, out gateway.Outbound, buttons []gateway.Button) (string, error) {
	return "", errNotYet
}
func (a *Adapter) EditButtons(ctx context.Context, addr gateway.Address, messageID, text string, buttons []gateway.Button) error {
	return errNotYet
}
