// Package matrix connects gatewayd to any Matrix homeserver through mautrix,
// used as an HTTP client only: rooms and m.thread threads become lanes, the
// /sync token advances only after the gateway committed a batch, and every
// send carries a transaction id derived from its outbox row so a retried
// send is stored once by the homeserver.
package matrix

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"
	"maunium.net/go/mautrix/id"

	"github.com/gatewayd/gatewayd/gateway"
)

// PlatformName is the platform name used in gateway addresses.
const PlatformName = "matrix"

// CursorStore keeps what must survive a restart: the /sync next_batch
// token and the rooms already told they are encrypted. *store.Store
// satisfies it (the same named-cursor table Telegram keeps its offset in),
// so Matrix needs no table of its own.
type CursorStore interface {
	Cursor(ctx context.Context, name string) (string, bool, error)
	SetCursor(ctx context.Context, name, value string) error
}

// Config configures an Adapter.
type Config struct {
	Homeserver   string   // matrix.homeserver (URL)
	UserID       string   // matrix.user_id ("" = whoami's answer)
	AccessToken  string   // matrix.access_token; never logged
	AllowedUsers []string // matrix.allowed_users (full ids @u:server)
	AllowedRooms []string // matrix.allowed_rooms ("" = every room an allowed user invites the bot to)
	// Commands are the gateway's commands: "!name" in a message becomes
	// "/name" for the gateway when name is one of them.
	Commands []gateway.CommandInfo
	Cursor   CursorStore // required: where next_batch and per-room state live
	// HTTPClient is the base client; nil uses one without an overall
	// timeout: each call carries its own deadline (media transfers a
	// longer one, mediaTimeout), so long downloads are not cut by a
	// client-wide one.
	HTTPClient *http.Client
	Logger     *zap.Logger

	// SyncTimeout is the /sync long-poll; default 30 s. Tests shorten it.
	SyncTimeout time.Duration
	// RetryBackoff is the first wait after a failed sync or delivery (the
	// wait doubles up to 30 s); default 1 s.
	RetryBackoff time.Duration
	// PreviewEditInterval spaces edits of a streamed preview (each counts
	// against the homeserver's message rate limit); default 2 s.
	PreviewEditInterval time.Duration
	Now                 func() time.Time

	// syncGrace is how long past the long-poll timeout a /sync may take
	// before it is cut and made again; default 15 s (tests shorten it).
	syncGrace time.Duration
}

// ErrConfig marks an invalid configuration; it is a gateway.ErrConfig, so
// the daemon exits 2 on it.
var ErrConfig = fmt.Errorf("matrix: invalid config: %w", gateway.ErrConfig)

func (c *Config) normalise() error {
	u, err := url.Parse(strings.TrimSpace(c.Homeserver))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: matrix.homeserver %q is not an http(s) URL", ErrConfig, c.Homeserver)
	}
	c.Homeserver = strings.TrimRight(u.String(), "/")
	if strings.TrimSpace(c.AccessToken) == "" {
		return fmt.Errorf("%w: matrix.access_token is empty", ErrConfig)
	}
	if c.UserID != "" {
		if err := ValidUserID(c.UserID); err != nil {
			return fmt.Errorf("%w: matrix.user_id: %v", ErrConfig, err)
		}
	}
	for _, u := range c.AllowedUsers {
		if err := ValidUserID(u); err != nil {
			return fmt.Errorf("%w: matrix.allowed_users: %v", ErrConfig, err)
		}
	}
	for _, r := range c.AllowedRooms {
		if err := ValidRoomID(r); err != nil {
			return fmt.Errorf("%w: matrix.allowed_rooms: %v", ErrConfig, err)
		}
	}
	if c.Cursor == nil {
		return fmt.Errorf("%w: no cursor store", ErrConfig)
	}
	c.defaults()
	return nil
}

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.SyncTimeout <= 0 {
		c.SyncTimeout = 30 * time.Second
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.syncGrace <= 0 {
		c.syncGrace = 15 * time.Second
	}
	if c.PreviewEditInterval <= 0 {
		c.PreviewEditInterval = 2 * time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
}

// ValidUserID checks a full Matrix user id (@localpart:server); config/
// uses it for matrix.user_id, matrix.allowed_users and matrix.admins.
func ValidUserID(s string) error {
	if _, _, err := id.UserID(s).ParseAndValidateRelaxed(); err != nil || !strings.HasPrefix(s, "@") {
		return fmt.Errorf("%q is not a full Matrix user id (@name:server)", s)
	}
	return nil
}

// ValidRoomID checks a room id (!opaque:server, or !hash in room v12);
// aliases (#name:server) are not accepted because events carry ids. A
// room id holding ":$" is refused: a thread's session key is split at the
// first ":$", so such a room could share a key with another room's thread.
func ValidRoomID(s string) error {
	if !strings.HasPrefix(s, "!") || !validMatrixID(s) || strings.Contains(s, ":$") {
		return fmt.Errorf("%q is not a Matrix room id (!id:server)", s)
	}
	return nil
}

// validMatrixID is the rule session keys use for Matrix ids: 2-255 bytes
// of printable ASCII without space or '/'.
func validMatrixID(s string) bool {
	if len(s) < 2 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' || s[i] == '/' {
			return false
		}
	}
	return true
}
