package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"go.uber.org/zap"
)

// envCPUProfile names a file to write a CPU profile of the whole run to.
// It is a developer's hook for finding where gatewayd's own CPU goes under
// tools/loadgen, off unless set and not part of the configuration.
const envCPUProfile = "GATEWAYD_CPUPROFILE"

// startCPUProfile starts profiling when envCPUProfile is set and returns
// the function that stops it and closes the file.
func startCPUProfile(log *zap.Logger) (stop func(), err error) {
	path := os.Getenv(envCPUProfile)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("gatewayd: %s: %w", envCPUProfile, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("gatewayd: %s: %w", envCPUProfile, err)
	}
	log.Info("profile.cpu.started", zap.String("file", path))
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Warn("profile.cpu.close_failed", zap.Error(err))
		}
	}, nil
}
