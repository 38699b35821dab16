// Package api is the local HTTP platform: a lane per URL path, a message per
// POST, answered with the lane's reply to that message (as JSON, or as a
// stream of server-sent events). It needs no bot token, so it is the
// embedded default and the black-box door for tests.
package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/netlimit"
	"github.com/gatewayd/gatewayd/store"
)

// PlatformName is the platform name in addresses and session keys
// ("v1:api:<lane>").
const PlatformName = "api"

// MaxTextBytes is the largest message text accepted.
const MaxTextBytes = 64 << 10

// Config configures the API platform.
type Config struct {
	Listen string // loopback address, e.g. "127.0.0.1:8377" (port 0 picks one)
	Token  string // optional bearer token for /api/; "" allows only loopback listeners
	// AllowGroup (api.allow_group) names a group whose members may use the
	// listener without Token, besides the daemon's user and root (peer.go).
	AllowGroup string
	// Public are the paths answered to every local user without Token
	// (/healthz; /metrics with api.metrics_public). Every other path of the
	// listener Run serves is answered without Token only to the users
	// peer.go lets in.
	Public []string
	Logger *zap.Logger
	// Answers records the answer to every message, so a repeated message id
	// is answered with the same body and GET .../messages/{id} can show it.
	// Required: Run refuses to start without it.
	Answers AnswerStore
	// Approvals takes the decisions POSTed to .../approvals/{id} and lists
	// what is pending; Questions the same for Codex's questions; Deliveries
	// hears which deferred outbox rows a response carried. The gateway is
	// all three. Required: Run refuses to start without them.
	Approvals  ApprovalDecider
	Questions  QuestionAnswerer
	Deliveries DeliveryReporter
	// Handlers are extra routes on the same listener (e.g. "/healthz",
	// "/metrics"); they are served without the bearer token, behind the
	// same Host check (and Origin check under /api/).
	Handlers map[string]http.Handler

	// AllowedHosts are Host header values answered besides the loopback
	// names, the listen host and the connection's own IP: "name" on any
	// port, "name:port" on that port. AllowedOrigins are the browser
	// origins allowed to call /api/ (besides this server's own). See guard.go.
	AllowedHosts   []string
	AllowedOrigins []string
	// MaxConnections bounds the connections served at once; default 256.
	// As many more are answered at once (503 with Retry-After, or
	// HealthPath served) and closed; beyond that a canned 503.
	MaxConnections int
	// MaxFileBytes bounds one file of a multipart message (files.max_bytes;
	// default files.DefaultMaxBytes); a larger one is answered 413.
	MaxFileBytes int64
	// SpoolDir holds uploaded files while the message is accepted (the
	// gateway then stores them under <state_dir>/files): the daemon's is
	// <state_dir>/spool; "" is the system's temporary directory.
	SpoolDir string
	// MaxSpoolBytes bounds the bytes spooled by all uploads at once; a
	// request that would exceed it is answered 503 with Retry-After.
	// Default 4 × MaxFiles × MaxFileBytes (spool.go).
	MaxSpoolBytes int64
	// Files names the lanes' out directories, whose files (the agent's
	// send_file) GET /api/lanes/{lane}/files/{id} serves; nil serves none.
	Files OutDirs

	// Timeouts; zero means the default. There is no write timeout: a
	// streamed answer lasts as long as its turn.
	IdleTimeout       time.Duration // a keep-alive connection without a request is closed; default 60s
	ReadHeaderTimeout time.Duration // default 10s
	BodyTimeout       time.Duration // the whole request, headers and body, must arrive within it; default 30s
	// KeepAliveInterval is how often a silent event stream gets a comment
	// line, so proxies and clients do not take it for dead; default 15s.
	KeepAliveInterval time.Duration

	// SharedAnswers: other nodes on the same database may answer this
	// node's requests, and this node those of others (shared.go). An answer
	// recorded with no request here is then done: the request holding it
	// is on another node.
	SharedAnswers bool
	// SharedPoll is how often waiting requests look for an answer another
	// node recorded, should its notification be missed; default
	// DefaultSharedPoll.
	SharedPoll time.Duration
	// Relay streams the lanes this node owns to requests other nodes
	// hold, and theirs to this node's requests (relay.go); nil: one node.
	Relay Relay
}

// Defaults of the Config fields left zero.
const (
	DefaultMaxConnections = 256
	// HealthPath is served even beyond MaxConnections: a probe never
	// waits behind the requests that fill the listener.
	HealthPath               = "/healthz"
	DefaultIdleTimeout       = 60 * time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 30 * time.Second
	DefaultKeepAliveInterval = 15 * time.Second
)

// withDefaults fills the fields left zero.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	setDefault := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	setDefault(&c.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDefault(&c.BodyTimeout, DefaultBodyTimeout)
	setDefault(&c.KeepAliveInterval, DefaultKeepAliveInterval)
	setDefault(&c.SharedPoll, DefaultSharedPoll)
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = files.DefaultMaxBytes
	}
	if c.MaxSpoolBytes <= 0 {
		c.MaxSpoolBytes = defaultMaxSpool(c.MaxFileBytes)
	}
	return c
}

// AnswerStore is where answers outlive the request and the process;
// *store.Store implements it.
type AnswerStore interface {
	// RecordAnswer records body unless an answer is recorded already, and
	// returns the recorded one (the first answer wins).
	RecordAnswer(ctx context.Context, sessionKey, messageID string, body []byte) ([]byte, error)
	// Exchange returns the inbound message platform/messageID with its
	// state and recorded answer, or an error wrapping store.ErrNotFound.
	Exchange(ctx context.Context, platform, messageID string) (store.Exchange, error)
}

// ApprovalDecider is the gateway's side of chat approvals on the API lane;
// *gateway.Gateway implements it.
type ApprovalDecider interface {
	PendingApprovals(sessionKey string) []gateway.PendingApproval
	Decide(sessionKey, id, decision, senderID string) error
}

// QuestionAnswerer is the gateway's side of Codex's questions on the API
// lane; *gateway.Gateway implements it.
type QuestionAnswerer interface {
	PendingQuestions(sessionKey string) []gateway.PendingQuestion
	AnswerQuestion(sessionKey, id string, answers map[string][]string, senderID string) error
}

// DeliveryReporter is told what became of outbox rows the platform
// deferred (gateway.ErrDeferred); *gateway.Gateway implements it.
type DeliveryReporter interface {
	// Delivered marks outbox row id sent: a response carrying it was
	// written.
	Delivered(ctx context.Context, id int64, platformMessageID string) error
	// Redeliver makes the lane's held rows due again: a request opened on
	// the lane, or one that took them went away before they reached it.
	Redeliver(ctx context.Context, sessionKey string) error
}

var (
	_ ApprovalDecider  = (*gateway.Gateway)(nil)
	_ QuestionAnswerer = (*gateway.Gateway)(nil)
	_ DeliveryReporter = (*gateway.Gateway)(nil)
)

// Platform is the API lane: the whole gateway.Platform and the
// ProgressEditor capability. It hands messages to the Sink given to Run,
// and decisions, answers and deliveries to the gateway's sides in Config.
type Platform struct {
	cfg   Config
	log   *zap.Logger
	ready chan struct{}
	stop  chan struct{} // closed when Run ends: waiting requests give up
	seq   atomic.Uint64
	spool *spoolBudget // the uploads' shared room in SpoolDir

	// Who may come without a token (peer.go): set by Run; lookupUID is a
	// test's stand-in for the kernel's socket tables.
	policy                 *peerPolicy
	lookupUID              func(local, remote netip.AddrPort) (uint32, error)
	refusedLog, unknownLog rateLog

	mu       sync.Mutex
	addr     string
	sink     gateway.Sink
	waiters  map[string][]*waiter // inbound message id → requests waiting for its answer
	previews map[string]*waiter   // preview message id → request
	// carried counts, per outbox row the platform took (ErrDeferred), the
	// open requests carrying it; the first to write it reports it delivered.
	carried map[int64]int
	// deferredLanes are lanes with outbox rows held for their next request.
	deferredLanes map[string]bool
	// endedSince is when a waiting message was first seen ended without an
	// answer (shared answers; shared.go).
	endedSince map[string]time.Time
	// remote are the previews and status messages of messages with no
	// request here, relayed to the node that holds it; pulls serialise
	// each lane's reads of the relay (relay.go).
	remote map[string]remoteStream
	pulls  map[string]*laneReads
}

// Compile-time checks of everything the platform implements.
var (
	_ gateway.Platform             = (*Platform)(nil)
	_ gateway.ProgressEditor       = (*Platform)(nil)
	_ gateway.EveryMessageAnswered = (*Platform)(nil)
)

// New builds the platform; Run starts listening.
func New(cfg Config) *Platform {
	cfg = cfg.withDefaults()
	return &Platform{cfg: cfg, log: cfg.Logger.Named("api"), ready: make(chan struct{}), stop: make(chan struct{}),
		spool:      &spoolBudget{max: cfg.MaxSpoolBytes},
		refusedLog: rateLog{every: peerLogEvery}, unknownLog: rateLog{every: peerLogEvery},
		waiters: map[string][]*waiter{}, previews: map[string]*waiter{}, carried: map[int64]int{},
		deferredLanes: map[string]bool{}, endedSince: map[string]time.Time{},
		remote: map[string]remoteStream{}, pulls: map[string]*laneReads{}}
}

// AnswersEveryMessage implements gateway.EveryMessageAnswered: every POST
// waits for the answer to its message.
func (p *Platform) AnswersEveryMessage() {}

// Name returns "api".
func (p *Platform) Name() string { return PlatformName }

// Ready is closed once the listener is bound.
func (p *Platform) Ready() <-chan struct{} { return p.ready }

// Addr returns the bound address ("" before Ready).
func (p *Platform) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// checkGateway refuses a config without the gateway's sides Run needs.
func (c Config) checkGateway() error {
	for _, need := range []struct {
		missing bool
		what    string
	}{
		{c.Answers == nil, "answer store (Config.Answers)"},
		{c.Approvals == nil, "approval decider (Config.Approvals)"},
		{c.Questions == nil, "question answerer (Config.Questions)"},
		{c.Deliveries == nil, "delivery reporter (Config.Deliveries)"},
	} {
		if need.missing {
			return errors.New("api: config has no " + need.what)
		}
	}
	return nil
}

// Run serves HTTP until ctx ends.
func (p *Platform) Run(ctx context.Context, sink gateway.Sink) error {
	if err := p.cfg.checkGateway(); err != nil {
		return err
	}
	if err := checkListen(p.cfg.Listen, p.cfg.Token); err != nil {
		return err
	}
	policy, err := newPeerPolicy(p.cfg.AllowGroup)
	if err != nil {
		return err
	}
	p.policy = policy
	ln, err := net.Listen("tcp", p.cfg.Listen)
	if err != nil {
		return fmt.Errorf("api: listen %s: %w", p.cfg.Listen, err)
	}
	p.mu.Lock()
	p.addr, p.sink = ln.Addr().String(), sink
	p.mu.Unlock()
	srv, err := p.server()
	if err != nil {
		ln.Close()
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(netlimit.Listen(ln, p.cfg.MaxConnections)) }()
	close(p.ready)
	if p.cfg.SharedAnswers {
		go p.pollShared()
	}
	p.log.Info("api.listening", zap.String("addr", ln.Addr().String()), zap.String("without_token", p.withoutToken()))
	select {
	case <-ctx.Done():
	case err := <-errc:
		close(p.stop)
		return fmt.Errorf("api: serve: %w", err)
	}
	close(p.stop)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return nil
}

// server is the HTTP server of Run. net/http's own complaints (a panic in
// a handler, a bad request line) go to the zap log, so stdout stays JSON.
func (p *Platform) server() (*http.Server, error) {
	errLog, err := zap.NewStdLogAt(p.log.Named("http"), zap.WarnLevel)
	if err != nil {
		return nil, fmt.Errorf("api: error log: %w", err)
	}
	// ReadTimeout bounds headers plus body and ends when the body has been
	// read to its end (see readBody), so it cannot cut a streamed answer;
	// there is no WriteTimeout for the same reason.
	return &http.Server{
		// Beyond api.max_connections a request is answered 503 with
		// Retry-After at once, a health probe served (netlimit.Guard).
		Handler:           netlimit.Guard(p.checkPeer(p.Handler()), HealthPath),
		ConnContext:       netlimit.ConnContext(p.connContext),
		ReadHeaderTimeout: p.cfg.ReadHeaderTimeout,
		ReadTimeout:       p.cfg.BodyTimeout,
		IdleTimeout:       p.cfg.IdleTimeout,
		ErrorLog:          errLog,
	}, nil
}

// withoutToken says who the listener serves without a token, for the log.
func (p *Platform) withoutToken() string {
	if p.cfg.Token != "" {
		return "nobody: api.token is set"
	}
	return p.policy.String()
}

// checkListen refuses to serve the API without a token on a non-loopback
// address: anyone who can reach it could drive Codex.
func checkListen(listen, token string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("api: listen address %q: %w", listen, err)
	}
	if token != "" || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("api: listen address %q is not loopback; set a token to expose the API: %w", listen, gateway.ErrConfig)
}

// Handler returns the HTTP routes (exported for tests and embedding),
// every one behind the Host and Origin checks of guard.go. The peer check
// of peer.go is the listener's (Run), around this.
func (p *Platform) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /api/lanes/{lane}/messages",
		p.authorize(p.acceptBody(messageBody(p.cfg.MaxFileBytes), http.HandlerFunc(p.postMessage))))
	mux.Handle("GET /api/lanes/{lane}/messages/{id}", p.authorize(http.HandlerFunc(p.getMessage)))
	mux.Handle("GET /api/lanes/{lane}/approvals", p.authorize(http.HandlerFunc(p.listApprovals)))
	mux.Handle("GET /api/lanes/{lane}/files/{id}", p.authorize(http.HandlerFunc(p.getFile)))
	mux.Handle("POST /api/lanes/{lane}/approvals/{id}",
		p.authorize(p.acceptBody(jsonBody(maxDecisionBody), http.HandlerFunc(p.decideApproval))))
	mux.Handle("GET /api/lanes/{lane}/questions", p.authorize(http.HandlerFunc(p.listQuestions)))
	mux.Handle("POST /api/lanes/{lane}/questions/{id}",
		p.authorize(p.acceptBody(jsonBody(maxAnswerBody), http.HandlerFunc(p.answerQuestion))))
	for pattern, h := range p.cfg.Handlers {
		mux.Handle(pattern, h)
	}
	return newGuard(p.cfg.Listen, p.cfg.AllowedHosts, p.cfg.AllowedOrigins, p.log).wrap(mux)
}

func (p *Platform) authorize(next http.Handler) http.Handler {
	return RequireToken(p.cfg.Token, next)
}

// RequireToken runs next only for requests that carry token as their
// bearer token, and answers the others 401; with token "" it is next. The
// extra Handlers get no token check of their own, so one that needs it
// (/metrics) is wrapped in this.
func RequireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatewayd"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// nextID returns a unique, time-ordered message id.
func (p *Platform) nextID(prefix string) string {
	return prefix + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatUint(p.seq.Add(1), 36)
}

// Edit updates a streamed preview.
func (p *Platform) Edit(_ context.Context, _ gateway.Address, messageID, text string) error {
	p.mu.Lock()
	w := p.previews[messageID]
	p.mu.Unlock()
	if w != nil {
		w.setPreview(text)
		return nil
	}
	p.editRemote(messageID, []byte(text))
	return nil
}
