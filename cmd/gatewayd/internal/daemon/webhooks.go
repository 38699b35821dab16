package daemon

import (
	"context"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

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

// listenWebhooks builds the listener and binds its address when
// webhooks.listen is set; the gateway must exist (it is the Triggerer).
func (d *daemon) listenWebhooks() error {
	w := d.cfg.Webhooks
	if w.Listen == "" {
		if len(w.Hooks) > 0 {
			d.log.Warn("webhooks.disabled", zap.Strings("hooks", hookNames(w.Hooks)),
				zap.String("reason", "webhooks.hooks are set but webhooks.listen is empty: nothing receives them"))
		}
		return nil
	}
	srv, err := webhooks.New(webhooks.Config{
		Listen: w.Listen, Hooks: webhooks.HooksFrom(w.Hooks), Triggerer: d.gateway, Replays: d.store,
		Observer: d.metrics, Logger: d.log.Named("webhooks"),
		MaxAge: w.MaxAge, ReplayWindow: w.ReplayWindow, MaxConnections: w.MaxConnections,
	})
	if err != nil {
		return fmt.Errorf("gatewayd: webhooks: %w", err)
	}
	if err := srv.Listen(); err != nil {
		return fmt.Errorf("gatewayd: webhooks.listen %s: %w", w.Listen, err)
	}
	if len(w.Hooks) == 0 {
		d.log.Warn("webhooks.no_hooks", zap.String("addr", srv.Addr()),
			zap.String("reason", "webhooks.listen is set but webhooks.hooks is empty: every delivery is refused (401)"))
	}
	d.webhooks = srv
	return nil
}

// serveWebhooks starts answering deliveries (the gateway is ready).
func (d *daemon) serveWebhooks() {
	if d.webhooks == nil {
		return
	}
	if err := d.webhooks.Serve(); err != nil {
		d.log.Warn("webhooks.not_served", zap.Error(err))
		return
	}
	d.log.Info("webhooks.listening", zap.String("addr", d.webhooks.Addr()),
		zap.Strings("hooks", hookNames(d.cfg.Webhooks.Hooks)))
}

// stopWebhooks closes the listener and waits for the deliveries in
// flight; the second call does nothing.
func (d *daemon) stopWebhooks() {
	srv := d.webhooks
	if srv == nil {
		return
	}
	d.webhooks = nil
	ctx, cancel := context.WithTimeout(context.Background(), webhooksShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		d.log.Warn("webhooks.stop_failed", zap.Error(err))
		return
	}
	d.log.Info("webhooks.stopped")
}

func hookNames[T any](hooks map[string]T) []string {
	names := make([]string, 0, len(hooks))
	for n := range hooks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
