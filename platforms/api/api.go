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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
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
	Logger *zap.Logger
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
	MaxConnections int

	// Timeouts; zero means the default. There is no write timeout: a
	// streamed answer lasts as long as its turn.
	IdleTimeout       time.Duration // a keep-alive connection without a request is closed; default 60s
	ReadHeaderTimeout time.Duration // default 10s
	BodyTimeout       time.Duration // the whole request, headers and body, must arrive within it; default 30s
	// KeepAliveInterval is how often a silent event stream gets a comment
	// line, so proxies and clients do not take it for dead; default 15s.
	KeepAliveInterval time.Duration
}

// Defaults of the Config fields left zero.
const (
	DefaultMaxConnections    = 256
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
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	return c
}

// Platform implements gateway.Platform, gateway.Editor and gateway.Readier.
// Approval decisions reach the gateway when the Sink given to Run is a
// gateway.ApprovalDecider (the gateway is).
type Platform struct {
	cfg   Config
	log   *zap.Logger
	ready chan struct{}
	stop  chan struct{} // closed when Run ends: waiting requests give up
	seq   atomic.Uint64

	mu       sync.Mutex
	addr     string
	sink     gateway.Sink
	waiters  map[string]*waiter // inbound message id → request waiting for its answer
	previews map[string]*waiter // preview message id → request
	// held keeps lane notices that arrived while no request of the lane was
	// open (a cut-off notice after a restart, a reply whose client went
	// away); the lane's next request carries them, so none is lost.
	held map[string][]string
}

// Held notices are bounded so an abandoned lane cannot grow memory: at most
// maxHeldPerLane per lane (the oldest give way) and maxHeldLanes lanes.
const (
	maxHeldPerLane = 20
	maxHeldLanes   = 1000
)

var (
	_ gateway.Platform = (*Platform)(nil)
	_ gateway.Editor   = (*Platform)(nil)
	_ gateway.Readier  = (*Platform)(nil)
)

// New builds the platform; Run starts listening.
func New(cfg Config) *Platform {
	cfg = cfg.withDefaults()
	return &Platform{cfg: cfg, log: cfg.Logger.Named("api"), ready: make(chan struct{}), stop: make(chan struct{}),
		waiters: map[string]*waiter{}, previews: map[string]*waiter{}, held: map[string][]string{}}
}

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

// Run serves HTTP until ctx ends.
func (p *Platform) Run(ctx context.Context, sink gateway.Sink) error {
	if err := checkListen(p.cfg.Listen, p.cfg.Token); err != nil {
		return err
	}
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
	go func() { errc <- srv.Serve(newLimitListener(ln, p.cfg.MaxConnections)) }()
	close(p.ready)
	p.log.Info("api.listening", zap.String("addr", ln.Addr().String()))
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
		Handler:           p.Handler(),
		ReadHeaderTimeout: p.cfg.ReadHeaderTimeout,
		ReadTimeout:       p.cfg.BodyTimeout,
		IdleTimeout:       p.cfg.IdleTimeout,
		ErrorLog:          errLog,
	}, nil
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
// every one behind the Host and Origin checks of guard.go.
func (p *Platform) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /api/lanes/{lane}/messages",
		p.authorize(p.acceptBody(jsonBody(maxBody), http.HandlerFunc(p.postMessage))))
	mux.Handle("GET /api/lanes/{lane}/approvals", p.authorize(http.HandlerFunc(p.listApprovals)))
	mux.Handle("POST /api/lanes/{lane}/approvals/{id}",
		p.authorize(p.acceptBody(jsonBody(maxDecisionBody), http.HandlerFunc(p.decideApproval))))
	for pattern, h := range p.cfg.Handlers {
		mux.Handle(pattern, h)
	}
	return newGuard(p.cfg.Listen, p.cfg.AllowedHosts, p.cfg.AllowedOrigins, p.log).wrap(mux)
}

func (p *Platform) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.cfg.Token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(p.cfg.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="gatewayd"`)
				writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// nextID returns a unique, time-ordered message id.
func (p *Platform) nextID(prefix string) string {
	return prefix + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatUint(p.seq.Add(1), 36)
}

// Send hands an outbound to the request waiting for it: a preview starts a
// stream, a reply or notice answering a message ends that request, and a
// lane notice is attached to every request waiting on the lane. An
// approval question is such a notice that also carries the request
// structured (the "approval" event); with no request open only its text is
// held, as GET .../approvals lists it while it is pending.
func (p *Platform) Send(_ context.Context, out gateway.Outbound) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch w := p.waiters[out.InReplyTo]; {
	case out.Kind == gateway.OutPreview:
		id := p.nextID("preview-")
		if w != nil {
			p.previews[id] = w
			w.setPreview(out.Text)
		}
		return id, nil
	case w != nil:
		delete(p.waiters, out.InReplyTo)
		for id, pw := range p.previews {
			if pw == w {
				delete(p.previews, id)
			}
		}
		w.finish(out)
		return p.nextID("reply-"), nil
	}
	delivered := false
	for _, w := range p.waiters {
		// Only lane notices are shared; an answer whose request is gone
		// (client disconnected, or a restart) has no listener.
		if out.InReplyTo == "" && w.lane == out.Address.ChatID {
			w.addNotice(out.Text, out.Approval)
			delivered = true
		}
	}
	if !delivered {
		p.holdLocked(out)
	}
	return p.nextID("notice-"), nil
}

// holdLocked keeps an undeliverable message for the lane's next request.
// The caller holds p.mu.
func (p *Platform) holdLocked(out gateway.Outbound) {
	lane := out.Address.ChatID
	if _, ok := p.held[lane]; !ok && len(p.held) >= maxHeldLanes {
		p.log.Warn("api.notice_dropped", zap.String("lane", lane), zap.String("why", "too many lanes with held notices"))
		return
	}
	notes := append(p.held[lane], out.Text)
	if n := len(notes) - maxHeldPerLane; n > 0 {
		p.log.Warn("api.notice_dropped", zap.String("lane", lane), zap.Int("count", n), zap.String("why", "lane holds too many"))
		notes = notes[n:]
	}
	p.held[lane] = notes
	p.log.Info("api.notice_held", zap.String("lane", lane), zap.String("in_reply_to", out.InReplyTo),
		zap.String("kind", string(out.Kind)))
}

// Edit updates a streamed preview.
func (p *Platform) Edit(_ context.Context, _ gateway.Address, messageID, text string) error {
	p.mu.Lock()
	w := p.previews[messageID]
	p.mu.Unlock()
	if w != nil {
		w.setPreview(text)
	}
	return nil
}

func (p *Platform) register(id, lane string) (*waiter, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, busy := p.waiters[id]; busy {
		return nil, errors.New("a request with this id is already waiting")
	}
	w := newWaiter(lane)
	p.waiters[id] = w
	for _, text := range p.held[lane] {
		w.addNotice(text, nil)
	}
	delete(p.held, lane)
	return w, nil
}

func (p *Platform) unregister(id string, w *waiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiters[id] == w {
		delete(p.waiters, id)
	}
	for pid, pw := range p.previews {
		if pw == w {
			delete(p.previews, pid)
		}
	}
}
