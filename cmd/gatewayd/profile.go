package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"go.uber.org/zap"
)

// envCPUProfile names a file to write a CPU profile of the whole run to.
// It is a developer's hook for finding where gatewayd's own CPU goes under
// tools/loadgen, off unless set and not part of the configuration.
const envCPUProfile = "GATEWAYD_CPUPROFILE"

// envTrace names a file to write a Go execution trace of the whole run to.
// Like envCPUProfile it is a developer's hook, off unless set and not part of
// the configuration: the trace shows what a CPU profile cannot, the
// wake-ups, syscalls, goroutine hand-offs and GC cycles a message costs.
const envTrace = "GATEWAYD_TRACE"

// startCPUProfile starts profiling when envCPUProfile is set and returns
// the function that stops it and closes the file.
func startCPUProfile(log *zap.Logger) (stop func(), err error) {
	return startRecording(log, envCPUProfile, "cpu", pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace starts the execution trace when envTrace is set and returns the
// function that stops it and closes the file.
func startTrace(log *zap.Logger) (stop func(), err error) {
	return startRecording(log, envTrace, "trace", trace.Start, trace.Stop)
}

// startRecording starts a whole-run recording into the file env names, if
// it names one, and returns the function that stops it and closes the file.
// A file that cannot be created is an error naming env, not a run without
// the recording.
func startRecording(log *zap.Logger, env, what string, start func(io.Writer) error, end func()) (stop func(), err error) {
	path := os.Getenv(env)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("gatewayd: %s: %w", env, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("gatewayd: %s: %w", env, err)
	}
	log.Info("profile."+what+".started", zap.String("file", path))
	return func() {
		end()
		if err := f.Close(); err != nil {
			log.Warn("profile."+what+".close_failed", zap.Error(err))
		}
	}, nil
}
