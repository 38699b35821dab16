package matrix

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/backoff"
)

// Adapter is the Matrix platform: the whole gateway.Platform and every
// optional capability but ProgressEditor and MakerAuthorizer (ids alone
// decide who is allowed).
type Adapter struct {
	cfg Config
	log *zap.Logger
	cli *mautrix.Client

	ready     chan struct{}
	readyOnce sync.Once

	mu           sync.Mutex
	me           id.UserID
	users        map[string]bool // allowed senders
	roomsAllowed map[string]bool // allowed rooms; empty = any
	cooling      time.Time       // until when the homeserver asked us to wait
	legacyMedia  bool            // the homeserver serves only the unauthenticated download path

	commands  map[string]bool
	rooms     roomCache
	previews  previewTimes
	threads   *lru[bool]         // "room|root" → the bot speaks in that thread
	delivered *lru[deliveredMsg] // event id → where it went and who sent it (edits)
	choices   *lru[choiceSet]    // event id → the choices a message of ours offers
	own       *lru[bool]         // event ids of our own messages (replies to the bot)
	edits     *lru[bool]         // edit event ids handled (an edit replayed in-process)
	editTxns  *editTxns          // transaction ids of Edit and EditButtons
	reactions *lru[bool]         // reaction event ids delivered (a refetched batch)
	bg        sync.WaitGroup     // best-effort calls (read receipts) Run waits for
}

var (
	_ gateway.Platform     = (*Adapter)(nil)
	_ gateway.Typer        = (*Adapter)(nil)
	_ gateway.Deleter      = (*Adapter)(nil)
	_ gateway.ButtonSender = (*Adapter)(nil)
	_ gateway.ButtonEditor = (*Adapter)(nil)
	_ gateway.Authorizer   = (*Adapter)(nil)
)

// New checks cfg and builds the adapter; it does not touch the network.
func New(cfg Config) (*Adapter, error) {
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	cli, err := mautrix.NewClient(cfg.Homeserver, id.UserID(cfg.UserID), cfg.AccessToken)
	if err != nil {
		return nil, fmt.Errorf("%w: matrix.homeserver: %v", ErrConfig, err)
	}
	// NewClient's client has a 180 s overall timeout that would cut long
	// media downloads; every call carries its own deadline instead.
	// mautrix's own retries stay off (DefaultHTTPRetries 0): the outbox and
	// the sync loop are the one retry layer, honouring retry_after_ms.
	cli.Client = cfg.HTTPClient
	cli.UserAgent = "gatewayd " + mautrix.DefaultUserAgent
	a := &Adapter{
		cfg: cfg, log: cfg.Logger, cli: cli, ready: make(chan struct{}), me: id.UserID(cfg.UserID),
		commands: map[string]bool{},
		previews: previewTimes{newLRU[time.Time](256)}, threads: newLRU[bool](4096),
		delivered: newLRU[deliveredMsg](4096), choices: newLRU[choiceSet](512),
		own: newLRU[bool](4096), edits: newLRU[bool](1024), editTxns: newEditTxns(),
		reactions: newLRU[bool](1024),
	}
	for _, c := range cfg.Commands {
		a.commands[c.Name] = true
	}
	a.SetAllowlist(cfg.AllowedUsers, cfg.AllowedRooms)
	return a, nil
}

// Name is the platform name used in addresses.
func (a *Adapter) Name() string { return PlatformName }

// Ready is closed after whoami succeeded and the first /sync returned.
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// SetAllowlist replaces the allowed users and rooms (the daemon's SIGHUP
// reload); an empty room list allows every room.
func (a *Adapter) SetAllowlist(users, rooms []string) {
	u := make(map[string]bool, len(users))
	for _, s := range users {
		u[s] = true
	}
	r := make(map[string]bool, len(rooms))
	for _, s := range rooms {
		r[s] = true
	}
	a.mu.Lock()
	a.users, a.roomsAllowed = u, r
	a.mu.Unlock()
}

// Run checks the token, then syncs and delivers until ctx ends.
func (a *Adapter) Run(ctx context.Context, sink gateway.Sink) error {
	defer a.bg.Wait()
	if err := a.identify(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return newSyncer(a).poll(ctx, sink)
}

// identify asks whoami (retrying transient failures): a refused token is a
// configuration error naming matrix.access_token, a user id other than
// matrix.user_id one naming that key. It also learns which media download
// path the homeserver serves.
func (a *Adapter) identify(ctx context.Context) error {
	delays := backoff.New(a.cfg.RetryBackoff, maxRetryBackoff)
	for {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		who, err := a.cli.Whoami(rctx)
		cancel()
		if err == nil {
			return a.learnIdentity(ctx, who.UserID)
		}
		if tokenRefused(err) {
			return a.tokenRejected("whoami", err)
		}
		wait := delays.Next()
		if d, ok := retryAfter(err); ok {
			wait = max(wait, d)
		}
		a.log.Warn("matrix: whoami failed; retrying", zap.Duration("in", wait), zap.Error(err))
		if !backoff.Sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

func (a *Adapter) learnIdentity(ctx context.Context, who id.UserID) error {
	if a.cfg.UserID != "" && who != id.UserID(a.cfg.UserID) {
		return fmt.Errorf("%w: matrix.user_id is %s but the access token belongs to %s", ErrConfig, a.cfg.UserID, who)
	}
	// Typing may already run (it reads cli.UserID inside mautrix): the
	// client's id is written only when it was unknown, and before a.me,
	// whose lock orders it before any Typing that sees the identity.
	a.mu.Lock()
	if a.cli.UserID != who {
		a.cli.UserID = who
	}
	a.me = who
	a.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if v, err := a.cli.Versions(rctx); err == nil && !v.Supports(mautrix.FeatureAuthenticatedMedia) {
		a.mu.Lock()
		a.legacyMedia = true
		a.mu.Unlock()
		a.log.Info("matrix: the homeserver has no authenticated media; downloading from the legacy path")
	}
	return nil
}

// tokenRejected is the error for a call whose answer refused the token: a
// configuration error (the daemon exits 2) naming the key, never the token.
func (a *Adapter) tokenRejected(op string, err error) error {
	return fmt.Errorf("matrix: %s %s: access token rejected (check matrix.access_token): %s: %w",
		a.cfg.Homeserver, op, strings.ReplaceAll(err.Error(), a.cfg.AccessToken, "<token>"), gateway.ErrConfig)
}

func (a *Adapter) markReady() { a.readyOnce.Do(func() { close(a.ready) }) }

// maxRetryBackoff caps the wait between sync or delivery attempts.
const maxRetryBackoff = 30 * time.Second
