package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/daemon"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/doctor"
	"github.com/gatewayd/gatewayd/config"
)

func cmdRun(ctx context.Context, args []string, std cli.Stdio) error {
	f := cli.NewFlags("run", std)
	pos, err := f.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return cli.Usagef("run takes no arguments, got %q", pos)
	}
	opts := f.Options()
	cfg, err := config.Load(opts)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.Log, std.Err)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck // stderr sync fails on some terminals; nothing to do
	// Libraries that print with the standard logger (discordgo does, at
	// error level) would otherwise write plain text among the JSON lines.
	if undo, err := zap.RedirectStdLogAt(log.Named("stdlog"), zap.WarnLevel); err == nil {
		defer undo()
	}

	if tuneProcs {
		defer limitProcs(log)()
		logTimerSlack(log)
	}
	stopProfile, err := startCPUProfile(log)
	if err != nil {
		return err
	}
	defer stopProfile()
	stopTrace, err := startTrace(log)
	if err != nil {
		return err
	}
	defer stopTrace()
	sig := watchSignals(ctx, log, func(code int) { os.Exit(code) })
	defer sig.stop()
	err = daemon.Run(sig.ctx, daemon.Params{Config: cfg, Options: opts, Reload: sig.hup, Log: log,
		Version: Version(), PinnedCodexVersion: doctor.PinnedCodexVersion})
	if err != nil && sig.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = nil // a signal during start-up: a clean stop, not a failure
	}
	if err != nil {
		log.Error("daemon.failed", zap.Error(err))
	} else {
		log.Info("daemon.stopped")
	}
	return err
}

// signals turns SIGTERM/SIGINT into the cancellation of one root context; a
// second one exits at once. SIGHUP arrives on hup.
type signals struct {
	ctx  context.Context
	hup  <-chan struct{}
	stop func()
}

func watchSignals(parent context.Context, log *zap.Logger, exitNow func(int)) signals {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 4)
	hup := make(chan struct{}, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		stopping := false
		for {
			select {
			case <-done:
				return
			case s := <-ch:
				switch {
				case s == syscall.SIGHUP:
					select {
					case hup <- struct{}{}:
					default: // a reload is already pending
					}
				case stopping:
					log.Warn("shutdown.forced", zap.String("signal", s.String()))
					_ = log.Sync()
					exitNow(cli.ExitFailure)
				default:
					stopping = true
					log.Info("shutdown.signal", zap.String("signal", s.String()))
					cancel()
				}
			}
		}
	}()
	return signals{ctx: ctx, hup: hup, stop: func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}}
}
