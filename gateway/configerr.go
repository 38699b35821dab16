package gateway

import "errors"

// ErrConfig marks a platform failure that only the operator can fix: a bot
// token the platform rejects, an address the platform may not serve on.
// Platforms wrap it (fmt.Errorf("...: %w", gateway.ErrConfig)); Run passes
// it on wrapped, and the daemon exits with its configuration status (2),
// which the systemd unit does not restart: a restart cannot fix a rejected
// token, and a loop of them hammers the platform.
var ErrConfig = errors.New("configuration rejected")
