package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/backoff"
	"github.com/gorilla/websocket"
	"go.uber.org/zap"
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
	_ gateway.Renamer         = (*Adapter)(nil)
)

// intents are the gateway intents needed to read message content in guild
// channels, threads and DMs.
const intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages |
	discordgo.IntentsMessageContent | discordgo.IntentsDirectMessages

// queueSize bounds events waiting for the worker. When it is full the
// gateway reader blocks, which is the back-pressure we want: Discord then
// holds the events (RESUME replays them) instead of us dropping them.
const queueSize = 1024

// event is one gateway dispatch handed from discordgo's reader to our worker.
type event struct {
	ready       bool
	shard       int // of a ready: the shard whose session it is, or allShards
	message     *discordgo.Message
	edited      *discordgo.Message // MESSAGE_UPDATE: a message's new content
	interaction *discordgo.Interaction
	renamed     *chanInfo // THREAD_UPDATE that changed a known thread's name
}

// Adapter is the Discord platform. Create it with New.
type Adapter struct {
	cfg     Config
	log     *zap.Logger
	session *discordgo.Session

	allow    *allowlist
	channels *channelCache
	lanes    *laneIndex
	buttons  *buttonLanes

	queue     chan event
	stop      chan struct{} // closed when Run ends; handlers stop queueing
	stopOnce  sync.Once
	ready     chan struct{}
	readyOnce sync.Once

	mu          sync.Mutex
	sink        gateway.Sink
	botID       string
	appID       string
	commandsSet bool
	running     bool
}

// New builds an adapter; it connects only in Run.
func New(cfg Config) (*Adapter, error) {
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	shard := cfg.Shard
	if cfg.ShardSets != nil {
		shard = Shard{} // this session only talks REST; each held shard gets its own
	}
	s, err := newSession(cfg, shard)
	if err != nil {
		return nil, err
	}

	a := &Adapter{
		cfg:      cfg,
		log:      cfg.Logger.Named("discord"),
		session:  s,
		allow:    newAllowlist(cfg),
		channels: newChannelCache(),
		lanes:    newLaneIndex(cfg.Cursor, cfg.Logger.Named("discord")),
		buttons:  newButtonLanes(),
		queue:    make(chan event, queueSize),
		stop:     make(chan struct{}),
		ready:    make(chan struct{}),
	}
	if len(cfg.AllowedUsers) == 0 && len(cfg.AllowedRoles) == 0 {
		a.log.Warn("discord.allowlist.empty: no allowed users or roles; every sender is refused")
	}
	a.addHandlers(s, allShards, a.stopped)
	return a, nil
}

// newSession is one discordgo session: REST, and the gateway connection
// of shard (the zero Shard: unsharded).
func newSession(cfg Config, shard Shard) (*discordgo.Session, error) {
	s, err := discordgo.New(botToken(cfg.Token))
	if err != nil {
		return nil, fmt.Errorf("discord: new session: %w", err)
	}
	s.Client = httpClient(cfg)
	// A dialer of our own: discordgo's default is the shared
	// websocket.DefaultDialer, which must not be mutated.
	s.Dialer = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 45 * time.Second}
	s.Identify.Intents = intents
	if shard.Count > 1 {
		s.ShardID, s.ShardCount = shard.ID, shard.Count
	}
	s.StateEnabled = false // we cache the few channel facts we need
	// Handlers run on discordgo's reader goroutine, in gateway order; they
	// only hand events to our single worker, so order per lane is kept and
	// the reader is never blocked by Deliver.
	s.SyncEvents = true
	// 429s are surfaced as *gateway.RetryAfterError so the outbox (not a
	// blind sleep inside discordgo) decides when to try again.
	s.ShouldRetryOnRateLimit = false
	s.ShouldReconnectOnError = true
	return s, nil
}

// Name implements gateway.Platform.
func (a *Adapter) Name() string { return PlatformName }

// Ready implements gateway.Platform: closed after the first READY has been
// handled (commands registered, missed messages fed to the sink).
func (a *Adapter) Ready() <-chan struct{} { return a.ready }

// SetAllowlist replaces the allowed user and role ids (SIGHUP reload).
func (a *Adapter) SetAllowlist(users, roles []string) { a.allow.set(users, roles) }

// Run connects and delivers inbound messages to sink until ctx ends.
func (a *Adapter) Run(ctx context.Context, sink gateway.Sink) error {
	a.mu.Lock()
	if a.running || a.sink != nil {
		a.mu.Unlock()
		return errors.New("discord: Run called twice")
	}
	a.sink, a.running = sink, true
	a.mu.Unlock()

	if err := a.lanes.load(ctx); err != nil {
		a.log.Warn("discord.lanes.load_failed", zap.Error(err))
	}
	workerDone := make(chan struct{})
	go func() {
		defer close(workerDone)
		a.work(ctx)
	}()

	if a.cfg.ShardSets != nil {
		a.runShards(ctx)
		a.stopOnce.Do(func() { close(a.stop) })
		<-workerDone
		return nil
	}
	err := a.open(ctx, a.session)
	if err == nil {
		<-ctx.Done()
	}
	// Stop first, then hang up: a reconnect that discordgo starts while we
	// close sees the stop and hangs up again (see the Connect handler).
	a.stopOnce.Do(func() { close(a.stop) })
	if err == nil {
		if cerr := a.session.Close(); cerr != nil {
			a.log.Debug("discord.close", zap.Error(cerr))
		}
	}
	<-workerDone
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// open connects, retrying transient failures with backoff until ctx ends.
// An unauthorised token is returned at once: retrying cannot fix it.
func (a *Adapter) open(ctx context.Context, s *discordgo.Session) error {
	delays := backoff.New(time.Second, time.Minute)
	for {
		err := s.Open()
		if err == nil {
			return nil
		}
		if rejected := a.connectRejected(err); rejected != nil {
			return rejected
		}
		mapped := mapError("connect", err)
		if errors.Is(mapped, gateway.ErrPermanent) || fatalClose(err) {
			return mapped
		}
		wait := delays.Next()
		a.log.Warn("discord.connect_failed", zap.Error(mapped), zap.Duration("retry_in", wait))
		if !backoff.Sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// connectRejected returns the configuration error for a connect failure
// that only the operator can fix, or nil: the token refused (HTTP 401/403
// from the REST API, close code 4004 from the gateway) or intents the bot
// may not use (4013, 4014). The daemon then exits 2 instead of restarting
// into the same answer. The token is never part of a Discord URL.
func (a *Adapter) connectRejected(err error) error {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil && re.Request != nil {
		switch re.Response.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("discord: %s: bot token rejected (check discord.token): %s: %w",
				a.requestURL(re.Request.URL), restSummary(re), gateway.ErrConfig)
		}
	}
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case 4004:
			return fmt.Errorf("discord: gateway: authentication failed (close code 4004; check discord.token): %w", gateway.ErrConfig)
		case 4013, 4014:
			return fmt.Errorf("discord: gateway: intents refused (close code %d; enable the Message Content intent for the bot): %w",
				ce.Code, gateway.ErrConfig)
		}
	}
	return nil
}

// requestURL is the URL a request of discordgo's was actually sent to.
func (a *Adapter) requestURL(u *url.URL) string {
	if a.cfg.APIURL == "" {
		return u.String()
	}
	base, _ := url.Parse(a.cfg.APIURL) // validated in normalise
	return rewriteURL(u, base).String()
}

// fatalClose reports gateway close codes that reconnecting cannot fix:
// authentication failed (4004), invalid shard (4010), sharding required
// (4011), invalid API version (4012), invalid or disallowed intents
// (4013, 4014: MESSAGE_CONTENT must be enabled for the bot).
func fatalClose(err error) bool {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.Code {
	case 4004, 4010, 4011, 4012, 4013, 4014:
		return true
	}
	return false
}

// addHandlers feeds session s's events to the worker; shard is the shard
// it connects (allShards: unsharded), stopped whether it must hang up.
func (a *Adapter) addHandlers(s *discordgo.Session, shard int, stopped func() bool) {
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) {
		a.mu.Lock()
		if r.User != nil {
			a.botID = r.User.ID
			a.appID = r.User.ID
		}
		if r.Application != nil && r.Application.ID != "" {
			a.appID = r.Application.ID
		}
		a.mu.Unlock()
		a.enqueue(event{ready: true, shard: shard})
	})
	s.AddHandler(func(_ *discordgo.Session, g *discordgo.GuildCreate) {
		a.channels.putGuild(g.Guild)
	})
	s.AddHandler(func(_ *discordgo.Session, c *discordgo.ChannelCreate) { a.channels.put(c.Channel) })
	s.AddHandler(func(_ *discordgo.Session, c *discordgo.ChannelUpdate) { a.channels.put(c.Channel) })
	s.AddHandler(func(_ *discordgo.Session, c *discordgo.ThreadCreate) { a.channels.put(c.Channel) })
	s.AddHandler(func(_ *discordgo.Session, c *discordgo.ThreadUpdate) {
		if renamed, ok := a.channels.rename(c.Channel); ok {
			a.enqueue(event{renamed: &renamed})
		}
	})
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) {
		a.enqueue(event{message: m.Message})
	})
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageUpdate) {
		a.enqueue(event{edited: m.Message})
	})
	s.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) {
		a.enqueue(event{interaction: i.Interaction})
	})
	s.AddHandler(func(s *discordgo.Session, _ *discordgo.Connect) {
		// discordgo's reconnect loop cannot be stopped from outside; if it
		// gets through after Run ended, hang up again. Close must not run
		// here: Open holds the session lock while emitting Connect.
		if stopped() {
			go func() { _ = s.Close() }()
		}
	})
	s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
		if !stopped() {
			a.log.Info("discord.disconnected", zap.Int("shard", shard))
		}
	})
	s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Resumed) {
		if !stopped() {
			a.log.Info("discord.resumed", zap.Int("shard", shard))
		}
	})
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

// enqueue runs on discordgo's reader goroutine (SyncEvents). After Run has
// ended the event is dropped with a log line: nothing was acknowledged, and
// the next start fetches it again through backfill.
func (a *Adapter) enqueue(ev event) {
	select {
	case a.queue <- ev:
	case <-a.stop:
		// Not logged: the logger may belong to a finished test by now.
	}
}

// work handles events one at a time in gateway order.
func (a *Adapter) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.stop:
			return
		case ev := <-a.queue:
			switch {
			case ev.ready:
				a.onReady(ctx, ev.shard)
			case ev.message != nil:
				a.handleMessage(ctx, ev.message, false)
			case ev.edited != nil:
				a.handleEdit(ctx, ev.edited)
			case ev.interaction != nil:
				a.handleInteraction(ctx, ev.interaction)
			case ev.renamed != nil:
				a.handleRename(ctx, *ev.renamed)
			}
		}
	}
}

func (a *Adapter) onReady(ctx context.Context, shard int) {
	a.log.Info("discord.ready", zap.Int("shard", shard))
	a.registerCommands()
	a.backfill(ctx, shard)
	a.readyOnce.Do(func() { close(a.ready) })
}

func (a *Adapter) ids() (botID, appID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botID, a.appID
}

func (a *Adapter) currentSink() gateway.Sink {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sink
}
