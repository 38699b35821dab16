//go:build !linux

package setup

import (
	"errors"
	"io"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
)

func isTerminal(r io.Reader) bool { return cli.IsTerminal(r) }

// echoOff is not implemented here: the token is read with echo on, and
// init says so.
func echoOff(io.Reader) (func(), error) {
	return nil, errors.New("not supported on this system")
}
