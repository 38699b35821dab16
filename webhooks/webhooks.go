// Package webhooks is gatewayd's webhook listener: signed HTTP
// POSTs from GitHub, a CI system or anything that can compute an HMAC
// start a turn in a configured lane.
//
// A delivery is POST /hooks/NAME with a JSON body, signed with the hook's
// secret (auth.go): gatewayd's X-Gatewayd-Signature over a timestamp, the
// delivery id and the body, or GitHub's X-Hub-Signature-256 over the body.
// The body is read (bounded, within the read timeout) and the signature
// checked before the delivery takes one of MaxConcurrent slots, and the
// listener serves at most MaxConnections connections, so slow or unsigned
// senders cannot hold the slots a real delivery needs. The
// hook's template renders the decoded body into the turn's text, framed as
// outside data (frame.go), which gateway.Trigger records once per delivery
// id, so a redelivery runs nothing.
//
// Answers (JSON):
//
//	202 {"inbound_id": N, "duplicate": false}  accepted: the turn is queued
//	200 {"inbound_id": N, "duplicate": true}   this delivery id ran before
//	200 {"pong": true}                         GitHub's ping event (signed)
//	400 the body is not JSON                   401 no such hook, or signature missing, wrong or stale
//	404 the lane is unknown                    405 not a POST
//	409 this body ran under another delivery id within the replay window (GitHub's signature)
//	413 the body is over the limit (1 MiB)     422 the template failed or rendered nothing
//	429 the hook's max_per_minute is reached (Retry-After)
//	503 gatewayd is shutting down              500 anything else (logged)
//
// Nothing runs unless the answer is 202.
package webhooks

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/netlimit"
)

// Triggerer starts a turn no one typed: *gateway.Gateway.
type Triggerer interface {
	Trigger(ctx context.Context, t gateway.Trigger) (inboundID int64, duplicate bool, err error)
}

// Observer counts deliveries (metrics.Metrics): hook is a configured
// hook's name, "" for a name no hook has; outcome is one of the Outcome
// constants.
type Observer interface {
	WebhookDelivery(hook, outcome string)
}

// The outcomes of a delivery, as counted.
const (
	OutcomeAccepted  = "accepted"
	OutcomeDuplicate = "duplicate"
	OutcomePing      = "ping"
	// Refusals: nothing ran.
	OutcomeSignature    = "signature"
	OutcomeStale        = "stale"  // gatewayd's timestamp is outside MaxAge
	OutcomeReplay       = "replay" // a GitHub-signed body seen under another delivery id
	OutcomeRateLimited  = "rate_limited"
	OutcomeUnknownHook  = "unknown_hook"
	OutcomeTooLarge     = "too_large"
	OutcomeBadBody      = "bad_body"
	OutcomeTemplate     = "template"
	OutcomeLane         = "lane"
	OutcomeShuttingDown = "shutting_down"
	OutcomeError        = "error"
)

// Headers a delivery is read from.
const (
	HeaderGitHubSignature = "X-Hub-Signature-256"
	HeaderSignature       = "X-Gatewayd-Signature"
	HeaderGitHubDelivery  = "X-GitHub-Delivery"
	HeaderDelivery        = "X-Gatewayd-Delivery"
	HeaderTimestamp       = "X-Gatewayd-Timestamp"
	HeaderGitHubEvent     = "X-GitHub-Event"
	signaturePrefix       = "sha256="
)

// Defaults of Config's zero values.
const (
	DefaultMaxBodyBytes      = 1 << 20
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultTriggerTimeout    = 30 * time.Second
	DefaultMaxConcurrent     = 64
	DefaultMaxAge            = config.DefaultWebhookMaxAge
	DefaultReplayWindow      = config.DefaultWebhookReplayWindow
	DefaultMaxConnections    = config.DefaultWebhookMaxConnections
	DefaultMaxPerMinute      = config.DefaultHookMaxPerMinute
)

const (
	maxDeliveryIDBytes = 128 // a longer delivery id is hashed
	maxLoggedBytes     = 128 // text from a request, in logs and answers
)

// Hook is one configured hook.
type Hook struct {
	Name         string // the NAME of /hooks/NAME (matched ignoring case)
	Secret       string // the HMAC-SHA256 key
	Lane         string // the session key the turns run in
	Template     *template.Template
	MaxPerMinute int // authenticated deliveries taken in any minute; 0: DefaultMaxPerMinute
}

// HooksFrom converts the configuration's hooks, in name order.
func HooksFrom(hooks map[string]config.Hook) []Hook {
	out := make([]Hook, 0, len(hooks))
	for _, h := range hooks {
		out = append(out, Hook{Name: h.Name, Secret: h.Secret, Lane: h.Lane, Template: h.Template, MaxPerMinute: h.MaxPerMinute})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Replays remembers GitHub-signed bodies: *store.Store.
type Replays interface {
	// ClaimWebhookBody reports whether hook may run a body with this
	// SHA-256 under deliveryID: false when another delivery id brought it
	// since `since`. It records the claim at now.
	ClaimWebhookBody(ctx context.Context, hook, bodySHA256, deliveryID string, now, since time.Time) (bool, error)
}

// Config is what a Server needs. Zero durations and sizes take the
// defaults above.
type Config struct {
	Listen    string // host:port
	Hooks     []Hook
	Triggerer Triggerer
	Replays   Replays
	Observer  Observer         // nil: nothing is counted
	Logger    *zap.Logger      // nil: nothing is logged
	Now       func() time.Time // nil: time.Now; what MaxAge, the rate limits and the log's bound read

	MaxBodyBytes      int64
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration // headers and body
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	TriggerTimeout    time.Duration // recording one delivery
	MaxConcurrent     int           // authenticated deliveries handled at once; more wait
	MaxConnections    int           // connections served at once; more are answered 503 with Retry-After
	MaxAge            time.Duration // how far X-Gatewayd-Timestamp may be from now, either way
	ReplayWindow      time.Duration // how long a GitHub-signed body is remembered
}

// Server serves the hooks.
type Server struct {
	cfg     Config
	hooks   map[string]Hook // by lower-case name
	log     *zap.Logger
	obs     Observer
	slots   chan struct{}
	srv     *http.Server
	now     func() time.Time
	rate    rateLimiter
	refused *refusalLog
	// decoy is the key an unknown hook's delivery is checked with, so it
	// costs what a known one's does and its answer comes as late.
	decoy string

	mu       sync.Mutex
	ln       net.Listener
	serving  bool
	shutdown bool
	served   chan struct{} // closed when Serve's loop returned
}

type nopObserver struct{}

func (nopObserver) WebhookDelivery(string, string) {}

// New checks the hooks and builds the server; nothing listens yet.
func New(cfg Config) (*Server, error) {
	if cfg.Triggerer == nil || cfg.Replays == nil {
		return nil, errors.New("webhooks: no Triggerer or Replays")
	}
	setDefault(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDefault(&cfg.ReadTimeout, DefaultReadTimeout)
	setDefault(&cfg.WriteTimeout, DefaultWriteTimeout)
	setDefault(&cfg.IdleTimeout, DefaultIdleTimeout)
	setDefault(&cfg.TriggerTimeout, DefaultTriggerTimeout)
	setDefault(&cfg.MaxConcurrent, DefaultMaxConcurrent)
	setDefault(&cfg.MaxConnections, DefaultMaxConnections)
	setDefault(&cfg.MaxAge, DefaultMaxAge)
	setDefault(&cfg.ReplayWindow, DefaultReplayWindow)
	s := &Server{cfg: cfg, hooks: make(map[string]Hook, len(cfg.Hooks)), log: cfg.Logger, obs: cfg.Observer,
		slots: make(chan struct{}, cfg.MaxConcurrent), served: make(chan struct{}), now: cfg.Now, decoy: rand.Text()}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.refused = &refusalLog{log: s.log, every: refusalLogInterval}
	if s.obs == nil {
		s.obs = nopObserver{}
	}
	for _, h := range cfg.Hooks {
		key := strings.ToLower(h.Name)
		switch {
		case h.Name == "":
			return nil, errors.New("webhooks: a hook without a name")
		case s.hooks[key].Name != "":
			return nil, fmt.Errorf("webhooks: hook %q given twice (names are matched ignoring case)", h.Name)
		case h.Secret == "":
			return nil, fmt.Errorf("webhooks: hook %q has no secret", h.Name)
		case h.Lane == "":
			return nil, fmt.Errorf("webhooks: hook %q has no lane", h.Name)
		case h.Template == nil:
			return nil, fmt.Errorf("webhooks: hook %q has no template", h.Name)
		}
		setDefault(&h.MaxPerMinute, DefaultMaxPerMinute)
		s.hooks[key] = h
	}
	s.srv = &http.Server{
		// Beyond webhooks.max_connections a delivery is answered 503
		// with Retry-After at once, so its sender retries later.
		Handler:           netlimit.Guard(s.Handler()),
		ConnContext:       netlimit.ConnContext(nil),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(s.log.Named("http")),
	}
	return s, nil
}

func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Handler is the listener's routes (for tests, or to mount elsewhere).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/hooks/{name}", s.serveHook)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not found: deliveries go to POST /hooks/NAME")
	})
	return mux
}

// Listen binds the address, so a bad one fails the start; deliveries wait
// in the kernel's backlog until Serve.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("webhooks: listen on %s: %w", s.cfg.Listen, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil || s.shutdown {
		ln.Close()
		return errors.New("webhooks: Listen called twice, or after Shutdown")
	}
	s.ln = netlimit.Listen(ln, s.cfg.MaxConnections)
	return nil
}

// Addr is the bound address ("" before Listen).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Serve starts answering deliveries on the bound listener, in the
// background, until Shutdown.
func (s *Server) Serve() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil || s.shutdown || s.serving {
		return errors.New("webhooks: Serve needs Listen first, once, and not after Shutdown")
	}
	s.serving = true
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("webhooks.serve_failed", zap.Error(err))
		}
	}()
	return nil
}

// Shutdown stops accepting deliveries and waits, up to ctx, for those in
// flight to be answered.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return nil
	}
	s.shutdown = true
	serving, ln := s.serving, s.ln
	s.mu.Unlock()
	if !serving {
		if ln != nil {
			return ln.Close()
		}
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	<-s.served
	return err
}

// serveHook handles one delivery. What is refused before the hook is
// known (the method, the body's size) is refused alike for every name.
func (s *Server) serveHook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "deliveries are POSTs")
		return
	}
	name := r.PathValue("name")
	h, known := s.hooks[strings.ToLower(name)]
	d := &delivery{s: s, h: h, known: known, name: name, w: w, r: r}
	d.handle()
}

// delivery is one POST to /hooks/NAME.
type delivery struct {
	s     *Server
	h     Hook // the zero Hook when known is false
	known bool
	name  string // as requested
	w     http.ResponseWriter
	r     *http.Request
}

// handle reads and authenticates the delivery, then, holding a slot,
// renders and records it. Until it is authentic it holds nothing shared.
func (d *delivery) handle() {
	body, ok := d.readBody()
	if !ok {
		return
	}
	v, ok := d.authentic(body)
	if !ok {
		return
	}
	if d.r.Header.Get(HeaderGitHubEvent) == "ping" {
		d.s.obs.WebhookDelivery(d.h.Name, OutcomePing)
		d.s.log.Info("webhooks.ping", zap.String("hook", d.h.Name), zap.String("delivery", clip(v.id)))
		writeJSON(d.w, http.StatusOK, map[string]bool{"pong": true})
		return
	}
	if wait, ok := d.s.rate.take(d.h.Name, d.h.MaxPerMinute, d.s.now()); !ok {
		d.w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		d.refuse(OutcomeRateLimited, http.StatusTooManyRequests,
			fmt.Sprintf("hook %s took %d deliveries in the last minute (its max_per_minute); deliver again later", d.h.Name, d.h.MaxPerMinute))
		return
	}
	select {
	case d.s.slots <- struct{}{}:
		defer func() { <-d.s.slots }()
	case <-d.r.Context().Done():
		return
	}
	text, ok := d.render(body)
	if !ok || !d.claimBody(v, body) {
		return
	}
	d.trigger(frame(d.h.Name, text), v.id)
}

// authentic checks the signature, or refuses the delivery with the one
// answer an unknown hook gets too.
func (d *delivery) authentic(body []byte) (verified, bool) {
	secret := d.h.Secret
	if !d.known {
		secret = d.s.decoy
	}
	v, outcome, detail := d.authenticate(secret, body, d.s.now())
	if !d.known {
		outcome, detail = OutcomeUnknownHook, "no hook "+strconv.Quote(clip(d.name))
	}
	if outcome != "" {
		d.refuse(outcome, http.StatusUnauthorized, unauthorized, zap.String("detail", detail))
		return verified{}, false
	}
	return v, true
}

// render decodes the body and runs the hook's template over it.
func (d *delivery) render(body []byte) (string, bool) {
	value, err := decodeJSON(body)
	if err != nil {
		msg := "the body is not JSON: " + err.Error()
		if ct := d.r.Header.Get("Content-Type"); ct != "" && !strings.Contains(ct, "json") {
			msg += fmt.Sprintf(" (Content-Type is %q: send application/json; on GitHub set the webhook's content type to application/json)", clip(ct))
		}
		d.refuse(OutcomeBadBody, http.StatusBadRequest, msg)
		return "", false
	}
	text, err := render(d.h.Template, value)
	if err != nil {
		d.refuse(OutcomeTemplate, http.StatusUnprocessableEntity, err.Error())
		return "", false
	}
	return text, true
}

// claimBody refuses a GitHub-signed body that ran under another delivery
// id within the replay window: its id is not signed, so a captured
// delivery with a new id is otherwise a new delivery.
func (d *delivery) claimBody(v verified, body []byte) bool {
	if !v.bodyOnly {
		return true
	}
	sum := sha256.Sum256(body)
	now := d.s.now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(d.r.Context()), d.s.cfg.TriggerTimeout)
	defer cancel()
	fresh, err := d.s.cfg.Replays.ClaimWebhookBody(ctx, d.h.Name, hex.EncodeToString(sum[:]), v.id, now, now.Add(-d.s.cfg.ReplayWindow))
	switch {
	case err != nil:
		d.s.obs.WebhookDelivery(d.h.Name, OutcomeError)
		d.s.log.Error("webhooks.replay_check_failed", zap.String("hook", d.h.Name), zap.Error(err))
		writeError(d.w, http.StatusInternalServerError, "internal error: the delivery was not recorded; deliver again later")
		return false
	case !fresh:
		d.refuse(OutcomeReplay, http.StatusConflict, "this body was delivered under another delivery id within the replay window; "+
			"nothing runs (a sender whose bodies repeat signs with "+HeaderSignature+")")
		return false
	}
	return true
}

// readBody reads the body up to the limit; a larger one is refused. The
// server's ReadTimeout bounds how long a sender may take over it.
func (d *delivery) readBody() ([]byte, bool) {
	limit := d.s.cfg.MaxBodyBytes
	tooLarge := func() ([]byte, bool) {
		d.refuse(OutcomeTooLarge, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the body is larger than %d bytes", limit))
		return nil, false
	}
	if d.r.ContentLength > limit {
		return tooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(d.w, d.r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return tooLarge()
	case err != nil:
		d.refuse(OutcomeBadBody, http.StatusBadRequest, "the body could not be read", zap.Error(err))
		return nil, false
	}
	return body, true
}

// trigger hands the rendered text to the gateway. The request's end does
// not cancel it: a delivery half recorded helps nobody.
func (d *delivery) trigger(text, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(d.r.Context()), d.s.cfg.TriggerTimeout)
	defer cancel()
	inboundID, dup, err := d.s.cfg.Triggerer.Trigger(ctx, gateway.Trigger{
		Lane: d.h.Lane, ID: "hook:" + d.h.Name + ":" + id, Text: text,
		Origin: "🪝 " + d.h.Name, SenderID: "hook:" + d.h.Name, SenderName: "webhook " + d.h.Name,
	})
	fields := []zap.Field{zap.String("hook", d.h.Name), zap.String("lane", d.h.Lane), zap.String("delivery", id)}
	switch {
	case errors.Is(err, gateway.ErrUnknownLane):
		d.refuse(OutcomeLane, http.StatusNotFound, fmt.Sprintf("lane %s is unknown: gatewayd has not seen it yet "+
			"(a chat lane exists once someone talked to gatewayd there; an API lane v1:api:NAME needs nothing)", d.h.Lane),
			fields...)
	case errors.Is(err, gateway.ErrShuttingDown):
		d.w.Header().Set("Retry-After", "30")
		d.refuse(OutcomeShuttingDown, http.StatusServiceUnavailable, "gatewayd is shutting down; deliver again later", fields...)
	case err != nil:
		d.s.obs.WebhookDelivery(d.h.Name, OutcomeError)
		d.s.log.Error("webhooks.trigger_failed", append(fields, zap.Error(err))...)
		writeError(d.w, http.StatusInternalServerError, "internal error: the delivery was not recorded; deliver again later")
	case dup:
		d.s.obs.WebhookDelivery(d.h.Name, OutcomeDuplicate)
		d.s.log.Info("webhooks.duplicate", append(fields, zap.Int64("inbound_id", inboundID))...)
		writeJSON(d.w, http.StatusOK, answer{InboundID: inboundID, Duplicate: true})
	default:
		d.s.obs.WebhookDelivery(d.h.Name, OutcomeAccepted)
		d.s.log.Info("webhooks.accepted", append(fields, zap.Int64("inbound_id", inboundID))...)
		writeJSON(d.w, http.StatusAccepted, answer{InboundID: inboundID})
	}
}

// refuse answers a delivery that runs nothing, and counts it; the log
// gets at most a line a minute per hook (refusalLog). The log has the
// hook's name and the reason, never its secret.
func (d *delivery) refuse(outcome string, code int, msg string, fields ...zap.Field) {
	d.s.obs.WebhookDelivery(d.h.Name, outcome)
	hook := d.h.Name
	if !d.known {
		hook = clip(d.name)
	}
	d.s.refused.warn(d.h.Name, d.s.now(), append([]zap.Field{zap.String("hook", hook), zap.String("reason", outcome),
		zap.Int("status", code), zap.String("remote", d.r.RemoteAddr)}, fields...))
	writeError(d.w, code, msg)
}

type answer struct {
	InboundID int64 `json:"inbound_id"`
	Duplicate bool  `json:"duplicate"`
}

// decodeJSON decodes one JSON value, numbers kept as written (a 64-bit id
// stays its digits, not 9.8765432101e+10).
func decodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty body")
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// render runs the template over the body; what it makes is bounded.
func render(t *template.Template, value any) (string, error) {
	out := &limitedBuffer{max: config.MaxHookTemplateOutput}
	if err := t.Execute(out, value); err != nil {
		if out.over {
			return "", fmt.Errorf("the template's output is larger than %d bytes", config.MaxHookTemplateOutput)
		}
		return "", err
	}
	text := out.b.String()
	if strings.TrimSpace(text) == "" {
		return "", errors.New("the template rendered nothing for this body")
	}
	return text, nil
}

type limitedBuffer struct {
	b    bytes.Buffer
	max  int
	over bool
}

var errTooLong = errors.New("output too long")

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.b.Len()+len(p) > l.max {
		l.over = true
		return 0, errTooLong
	}
	return l.b.Write(p)
}

// deliveryID is the delivery's id as the sender gave it, or the body's
// SHA-256 when it gave none (an exact resend is then a duplicate); a long
// or unprintable id is replaced by its own SHA-256, so the trigger id
// stays short.
func deliveryID(header string, body []byte) string {
	if header == "" {
		sum := sha256.Sum256(body)
		return hex.EncodeToString(sum[:])
	}
	if len(header) > maxDeliveryIDBytes || strings.ContainsFunc(header, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		sum := sha256.Sum256([]byte(header))
		return hex.EncodeToString(sum[:])
	}
	return header
}

// clip bounds text taken from a request for logs and answers.
func clip(s string) string {
	if len(s) <= maxLoggedBytes {
		return s
	}
	return strings.ToValidUTF8(s[:maxLoggedBytes], "") + "…"
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // an error: the sender went away
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
