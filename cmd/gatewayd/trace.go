package main

import (
	"fmt"
	"os"
	"runtime/trace"

	"go.uber.org/zap"
)

// envTrace names a file to write a Go execution trace of the whole run to.
// Like envCPUProfile it is a developer's hook, off unless set and not part of
// the configuration: the trace shows what a CPU profile cannot, the
// wake-ups, syscalls, goroutine hand-offs and GC cycles a message costs.
const envTrace = "GATEWAYD_TRACE"

// startTrace starts the execution trace when envTrace is set and returns the
// function that stops it and closes the file.
func startTrace(log *zap.Logger) (stop func(), err error) {
	path := os.Getenv(envTrace)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("gatewayd: %s: %w", envTrace, err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("gatewayd: %s: %w", envTrace, err)
	}
	log.Info("profile.trace.started", zap.String("file", path))
	return func() {
		trace.Stop()
		if err := f.Close(); err != nil {
			log.Warn("profile.trace.close_failed", zap.Error(err))
		}
	}, nil
}
