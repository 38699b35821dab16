package doctor

import (
	"context"
	"errors"
	"fmt"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/platforms/matrix"
)

// checkMatrix checks the access token with whoami and, when
// matrix.user_id is set, that the token is that account's.
func (d *doctor) checkMatrix(ctx context.Context, mx config.Matrix) {
	if !mx.Enabled() {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	who, err := matrix.CheckToken(cctx, d.http, mx.Homeserver, mx.AccessToken)
	switch {
	case errors.Is(err, matrix.ErrTokenRefused):
		d.fail("matrix token refused: "+err.Error(),
			"set matrix.access_token (or matrix.access_token_file) to a token of the bot's account; `gatewayd init` logs in for one")
	case err != nil:
		d.fail("matrix: "+err.Error(), "check matrix.homeserver (the client-server API's base URL) and the network path to it")
	case mx.UserID != "" && who.UserID != mx.UserID:
		d.fail(fmt.Sprintf("matrix token belongs to %s, not matrix.user_id %s", who.UserID, mx.UserID),
			"set matrix.user_id to the token's account, or leave it empty")
	default:
		d.pass("matrix token accepted (%s, device %s)", who.UserID, who.DeviceID)
	}
	rooms := "every room an allowed user invites the bot to"
	if n := len(mx.AllowedRooms); n > 0 {
		rooms = fmt.Sprintf("%d room(s)", n)
	}
	d.checkAllowlist("matrix", len(mx.AllowedUsers), fmt.Sprintf("%d user(s), %s", len(mx.AllowedUsers), rooms),
		"set matrix.allowed_users (full ids, @name:server)")
}
