package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/backoff"
)

// Compile-time checks of everything the adapter implements.
var (
	_ gateway.Platform        = (*Adapter)(nil)
	_ gateway.Typer           = (*Adapter)(nil)
	_ gateway.Deleter         = (*Adapter)(nil)
	_ gateway.ButtonSender    = (*Adapter)(nil)
	_ gateway.ButtonEditor    = (*Adapter)(nil)
	_ gateway.Authorizer      = (*Adapter)(nil)
	_ gateway.MakerAuthorizer = (*Adapter)(nil)
)

// queueSize bounds envelopes waiting for the worker. The reader never
// blocks on it (a stalled reader makes slack-go drop the socket and
// stall its reconnect); when full, an envelope is dropped unacked and
// Slack redelivers it.
const queueSize = 4096

// ackTimeout bounds one ack: slack-go queues acks on 20 slots and blocks
// when they are full.
const ackTimeout = 5 * time.Second

// job is one Socket Mode event handed from the reader to the worker.
type job struct {
	connected bool                // a socket opened: backfill, then Ready
	req       *socketmode.Request // the envelope to ack after handling
	kind      socketmode.EventType
	data      any
	ackOnly   string // an envelope we cannot parse: ack it so it is not redelivered

	backfilled   []inMsg // one lane's missed messages, read by backfill
	backfillDone bool    // a backfill has queued all it read: Ready
}

// Adapter is the Slack platform. Create it with New.
type Adapter struct {
	cfg  Config
	log  *zap.Logger
	api  *slack.Client
	sm   *socketmode.Client
	http *http.Client // downloads; the same client slack-go uses

	allow   *allowlist
	lanes   *laneIndex
	names   *nameCache
	limits  *limiter
	typing  *typingState
	parts   *partLog
	denials *denialLog

	queue          chan job
	cancelBackfill context.CancelFunc // the running backfill's; the worker's alone
	backfills      sync.WaitGroup
	interactions   chan job      // presses and slash commands, acked already
	busyReplies    chan struct{} // slots of "busy" answers in flight

	botDMsMu  sync.Mutex
	botDMs    map[string]string // DM channels known to be the bot's, to their person
	stop      chan struct{}     // closed when Run ends
	stopOnce  sync.Once
	ready     chan struct{}
	readyOnce sync.Once

	started time.Time // messages before it may have been answered by an earlier process

	mu      sync.Mutex
	sink    gateway.Sink
	running bool
	bot     botIdentity
}

// botIdentity is what auth.test said of us: UserID is how mentions name
// the bot (<@U…>), BotID marks our own posts when Slack echoes them.
type botIdentity struct {
	UserID, BotID, TeamID string
}

// New builds an adapter; it connects only in Run.
func New(cfg Config) (*Adapter, error) {
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	log := cfg.Logger.Named("slack")
	client := httpClient(cfg)
	api := slack.New(cfg.BotToken,
		slack.OptionAppLevelToken(cfg.AppToken),
		slack.OptionAPIURL(cfg.APIURL),
		slack.OptionHTTPClient(client),
		// No OptionRetry: a 429 must reach the outbox as a RetryAfterError.
	)
	sm := socketmode.New(api,
		socketmode.OptionPingInterval(cfg.PingInterval),
		socketmode.OptionReadLimit(8<<20),
	)
	a := &Adapter{
		cfg:          cfg,
		log:          log,
		api:          api,
		sm:           sm,
		http:         client,
		allow:        newAllowlist(cfg.AllowedUsers, cfg.AllowedChannels),
		lanes:        newLaneIndex(cfg.Cursor, log),
		names:        newNameCache(cfg.Now),
		limits:       newLimiter(cfg.Now, cfg.UpdatesPerMinute),
		typing:       newTypingState(),
		parts:        newPartLog(),
		denials:      newDenialLog(cfg.Now),
		started:      cfg.Now(),
		queue:        make(chan job, queueSize),
		interactions: make(chan job, interactQueueSize),
		busyReplies:  make(chan struct{}, maxBusyReplies),
		botDMs:       map[string]string{},
		stop:         make(chan struct{}),
		ready:        make(chan struct{}),
	}
	if len(cfg.AllowedUsers) == 0 {
		log.Warn("slack.allowlist.empty: no allowed users; every sender is refused")
	}
	return a, nil
}

// Name implements gateway.Platform.
func (a *Adapter) Name() string { return PlatformName }

// Ready implements gateway.Platform: closed once the socket is connected
// and the first backfill has been handed to the gateway.
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// SetAllowlist replaces the allowed user and channel ids (SIGHUP reload).
func (a *Adapter) SetAllowlist(users, channels []string) { a.allow.set(users, channels) }

// Run connects and delivers inbound messages to sink until ctx ends. A
// token Slack refuses is a gateway.ErrConfig naming its key.
func (a *Adapter) Run(ctx context.Context, sink gateway.Sink) error {
	a.mu.Lock()
	if a.running {
		a.mu.Unlock()
		return errors.New("slack: Run called twice")
	}
	a.sink, a.running = sink, true
	a.mu.Unlock()
	defer a.stopOnce.Do(func() { close(a.stop) })

	if err := a.authenticate(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if _, err := a.lanes.refresh(ctx); err != nil {
		a.log.Warn("slack.lanes.load_failed", zap.Error(err))
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	workerDone, interactDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(workerDone)
		a.work(runCtx)
	}()
	go func() {
		defer close(interactDone)
		a.interact(runCtx)
	}()
	smDone := make(chan error, 1)
	go func() { smDone <- a.sm.RunContext(runCtx) }()
	err := a.read(runCtx, smDone)
	cancel()
	a.stopOnce.Do(func() { close(a.stop) })
	<-workerDone
	<-interactDone
	a.backfills.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// authenticate asks auth.test who the bot is, retrying network failures
// until ctx ends; a refused token is a configuration error.
func (a *Adapter) authenticate(ctx context.Context) error {
	delays := backoff.New(time.Second, time.Minute)
	for {
		resp, err := a.api.AuthTestContext(ctx)
		if err == nil {
			a.mu.Lock()
			a.bot = botIdentity{UserID: resp.UserID, BotID: resp.BotID, TeamID: resp.TeamID}
			a.mu.Unlock()
			a.log.Info("slack.authenticated", zap.String("bot_user_id", resp.UserID), zap.String("team_id", resp.TeamID))
			return nil
		}
		if code, refused := tokenRefused(err); refused {
			return fmt.Errorf("slack: auth.test: %s (check slack.bot_token): %w", code, gateway.ErrConfig)
		}
		wait := delays.Next()
		var rl *slack.RateLimitedError
		if errors.As(err, &rl) {
			wait = max(wait, rl.RetryAfter)
		}
		a.log.Warn("slack.auth_failed", zap.Error(err), zap.Duration("retry_in", wait))
		if !backoff.Sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// tokenRefused reports Slack's answers to a token that only the operator
// can fix.
func tokenRefused(err error) (string, bool) {
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) {
		return "", false
	}
	switch se.Err {
	case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
		"not_allowed_token_type", "missing_scope":
		return se.Err, true
	}
	return "", false
}

// read drains slack-go's events without ever blocking on the worker.
func (a *Adapter) read(ctx context.Context, smDone <-chan error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-smDone:
			if err == nil || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("slack: socket mode: %v (check slack.app_token): %w", err, gateway.ErrConfig)
		case ev := <-a.sm.Events:
			if err := a.onEvent(ctx, ev); err != nil {
				return err
			}
		}
	}
}

// onEvent sorts one event of slack-go's: connection news is logged (or
// fatal), events envelopes go to the worker, presses and slash commands
// are acked and go to theirs.
func (a *Adapter) onEvent(ctx context.Context, ev socketmode.Event) error {
	switch ev.Type {
	case socketmode.EventTypeConnected:
		a.log.Info("slack.connected")
		a.enqueue(job{connected: true})
	case socketmode.EventTypeConnectionError:
		return a.connectionError(ev.Data)
	case socketmode.EventTypeInvalidAuth:
		return fmt.Errorf("slack: apps.connections.open: invalid auth (check slack.app_token): %w", gateway.ErrConfig)
	case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
		a.log.Warn("slack.socket_error", zap.Any("error", ev.Data))
	case socketmode.EventTypeErrorBadMessage:
		a.badMessage(ev.Data)
	case socketmode.EventTypeEventsAPI:
		if ev.Request != nil {
			a.enqueue(job{req: ev.Request, kind: ev.Type, data: ev.Data})
		}
	case socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
		if ev.Request != nil {
			a.onInteractive(ctx, ev)
		}
	default:
		a.log.Debug("slack.socket_event", zap.String("type", string(ev.Type)))
	}
	return nil
}

// connectionError stops on an app token Slack refuses (slack-go would
// otherwise retry forever, e.g. a bot token given as the app token) and
// logs the rest, which slack-go retries with backoff.
func (a *Adapter) connectionError(data any) error {
	ce, _ := data.(*slack.ConnectionErrorEvent)
	if ce == nil {
		return nil
	}
	if code, refused := tokenRefused(ce.ErrorObj); refused {
		return fmt.Errorf("slack: apps.connections.open: %s (check slack.app_token): %w", code, gateway.ErrConfig)
	}
	a.log.Warn("slack.connect_failed", zap.Int("attempt", ce.Attempt), zap.Duration("retry_in", ce.Backoff),
		zap.Error(ce.ErrorObj))
	return nil
}

// badMessage acks an envelope slack-go could not parse (an event type it
// does not know), so Slack does not redeliver it for nothing.
func (a *Adapter) badMessage(data any) {
	bad, _ := data.(*socketmode.ErrorBadMessage)
	if bad == nil {
		return
	}
	var env struct {
		EnvelopeID string `json:"envelope_id"`
	}
	if json.Unmarshal(bad.Message, &env) == nil && env.EnvelopeID != "" {
		a.log.Debug("slack.bad_message", zap.Error(bad.Cause))
		a.enqueue(job{ackOnly: env.EnvelopeID})
	}
}

// enqueue hands j to the worker without blocking: a full queue drops the
// envelope unacked, and Slack redelivers it.
func (a *Adapter) enqueue(j job) {
	select {
	case a.queue <- j:
	default:
		a.log.Warn("slack.queue_full: envelope left for Slack to redeliver")
	}
}

// work handles jobs one at a time in socket order, and acks each envelope
// only after its message was committed (or deliberately ignored).
func (a *Adapter) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-a.queue:
			a.handle(ctx, j)
		}
	}
}

func (a *Adapter) handle(ctx context.Context, j job) {
	switch {
	case j.connected:
		a.startBackfill(ctx)
	case j.backfilled != nil:
		a.deliverBackfilled(ctx, j.backfilled)
	case j.backfillDone:
		a.readyOnce.Do(func() { close(a.ready) })
	case j.ackOnly != "":
		a.ack(ctx, j.ackOnly, nil)
	default:
		if a.dispatch(ctx, j) {
			a.ack(ctx, j.req.EnvelopeID, nil)
		}
	}
}

// dispatch handles one events envelope; false leaves it unacked (we are
// stopping and it was not committed: Slack redelivers it).
func (a *Adapter) dispatch(ctx context.Context, j job) bool {
	if j.kind == socketmode.EventTypeEventsAPI {
		ev, _ := j.data.(slackEventsAPI)
		return a.handleEventsAPI(ctx, ev, j.req.RetryAttempt)
	}
	return true
}

// ack acknowledges an envelope. An ack written while the socket is down
// goes out on the next one; one lost is a redelivery the inbox drops.
func (a *Adapter) ack(ctx context.Context, envelopeID string, payload any) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
	defer cancel()
	if err := a.sm.AckCtx(actx, envelopeID, payload); err != nil {
		a.log.Warn("slack.ack_failed", zap.String("envelope_id", envelopeID), zap.Error(err))
	}
}

// stopped reports whether Run has ended (or is ending).
func (a *Adapter) stopped() bool {
	select {
	case <-a.stop:
		return true
	default:
		return false
	}
}

func (a *Adapter) identity() botIdentity {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bot
}

func (a *Adapter) currentSink() gateway.Sink {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sink
}
