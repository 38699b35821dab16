package matrix

import (
	"errors"

	"github.com/gatewayd/gatewayd/gateway"
)

func (a *Adapter) allowedSender(user string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[user]
}

func (a *Adapter) allowedRoom(room string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.roomsAllowed) == 0 || a.roomsAllowed[room]
}

// Authorize implements gateway.Authorizer: ids alone decide on Matrix.
func (a *Adapter) Authorize(in gateway.Inbound) bool {
	return a.allowedSender(in.SenderID) && a.allowedRoom(in.Address.ChatID)
}

func isPermanent(err error) bool { return errors.Is(err, gateway.ErrPermanent) }
