package daemon

import (
	"context"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/metrics"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/webhooks"
)

// The daemon's wiring of the webhook listener (webhooks.listen):
// bound at start, so a bad address fails the start; serving once the
// gateway is ready; closed first on a stop, so the deliveries in flight
// still reach a gateway that takes them, before it drains.

var (
	_ webhooks.Observer = (*metrics.Metrics)(nil)
	_ webhooks.Replays  = (*store.Store)(nil)
)

// webhooksShutdownTimeout bounds the wait for deliveries in flight; each
// only records a row.
const webhooksShutdownTimeout = 10 * time.Second

// webhookListener is the daemon's webhook listener: none when
// webhooks.listen is empty.
type webhookListener struct {
	srv   *webhooks.Server // nil: none, or stopped
	log   *zap.Logger
	hooks []string // the names of the hooks it serves
}

// listen builds the listener and binds its address when webhooks.listen
// is set; the gateway must exist (it is the Triggerer).
func (l *webhookListener) listen(w config.Webhooks, gw webhooks.Triggerer, st webhooks.Replays, m *metrics.Metrics,
	log *zap.Logger) error {
	l.log = log
	if w.Listen == "" {
		if len(w.Hooks) > 0 {
			log.Warn("webhooks.disabled", zap.Strings("hooks", hookNames(w.Hooks)),
				zap.String("reason", "webhooks.hooks are set but webhooks.listen is empty: nothing receives them"))
		}
		return nil
	}
	srv, err := webhooks.New(webhooks.Config{
		Listen: w.Listen, Hooks: webhooks.HooksFrom(w.Hooks), Triggerer: gw, Replays: st,
		Observer: m, Logger: log.Named("webhooks"),
		MaxAge: w.MaxAge, ReplayWindow: w.ReplayWindow, MaxConnections: w.MaxConnections,
	})
	if err != nil {
		return fmt.Errorf("gatewayd: webhooks: %w", err)
	}
	if err := srv.Listen(); err != nil {
		return fmt.Errorf("gatewayd: webhooks.listen %s: %w", w.Listen, err)
	}
	if len(w.Hooks) == 0 {
		log.Warn("webhooks.no_hooks", zap.String("addr", srv.Addr()),
			zap.String("reason", "webhooks.listen is set but webhooks.hooks is empty: every delivery is refused (401)"))
	}
	l.srv, l.hooks = srv, hookNames(w.Hooks)
	return nil
}

// serve starts answering deliveries (the gateway is ready).
func (l *webhookListener) serve() {
	if l.srv == nil {
		return
	}
	if err := l.srv.Serve(); err != nil {
		l.log.Warn("webhooks.not_served", zap.Error(err))
		return
	}
	l.log.Info("webhooks.listening", zap.String("addr", l.srv.Addr()), zap.Strings("hooks", l.hooks))
}

// stop closes the listener and waits for the deliveries in flight; the
// second call does nothing.
func (l *webhookListener) stop() {
	srv := l.srv
	if srv == nil {
		return
	}
	l.srv = nil
	ctx, cancel := context.WithTimeout(context.Background(), webhooksShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		l.log.Warn("webhooks.stop_failed", zap.Error(err))
		return
	}
	l.log.Info("webhooks.stopped")
}

func hookNames[T any](hooks map[string]T) []string {
	names := make([]string, 0, len(hooks))
	for n := range hooks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
