package config

import (
	"errors"
	"runtime"
	"time"
)

// A key's default is written once, in the key table (keys.go); Defaults
// decodes them all. The constants below are the defaults of keys that a
// package reads for a field left zero by a caller that builds its own
// options (codex.Options, webhooks.Config) or that a test checks against
// the shipped unit; the table uses them, so they cannot drift apart.
//
// One convention for "never": a zero value means off/never where the key
// documents one (lanes.idle_evict, lanes.compact_at, lanes.rotate,
// lanes.max_per_minute), and the packages' fields read it the same way.
// No field uses a negative value as a sentinel.

// Defaults of configuration keys (the key is named beside each).
const (
	DefaultIdleEvict = 30 * time.Minute // lanes.idle_evict

	DefaultScheduleMinInterval = time.Minute      // schedules.min_interval
	DefaultSchedulesPerLane    = 20               // schedules.max_per_lane
	DefaultTurnTimeout         = 30 * time.Minute // codex.turn_timeout
	DefaultResumeTimeout       = 10 * time.Minute // codex.resume_timeout: generous on purpose, ctx can cancel
	DefaultStartTimeout        = 30 * time.Second // codex.start_timeout: initialize and thread/start
	// codex.max_processes: RLIMIT_NPROC counts every task of the daemon's
	// uid, not the app-server's alone; above the unit's TasksMax (4096) so
	// under systemd the cgroup trips first, and far above the few hundred
	// tasks a desktop user's session runs besides.
	DefaultCodexMaxProcesses = 8192
)

// Defaults of behaviour that is not a key.
const (
	// DefaultCompactCooldownTurns is how many turns must run after a
	// compaction attempt before another automatic one.
	DefaultCompactCooldownTurns = 3
	// DefaultPreviewInterval is the minimum time between edits of a
	// streamed preview.
	DefaultPreviewInterval = time.Second
	// DefaultTypingInterval is how often the typing indicator is refreshed.
	DefaultTypingInterval = 4 * time.Second
	// DrainInterruptTimeout bounds the step of shutdown that interrupts the
	// turns still running after shutdown.drain_timeout: the interrupts go
	// out together, so the step takes at most this however many turns run
	// (the systemd unit's stop timeout counts on it).
	DrainInterruptTimeout = 5 * time.Second
	// DrainInterruptedWait is how long shutdown then waits for the
	// interrupted turns to return before it logs them and goes on.
	DrainInterruptedWait = 10 * time.Second
)

// DefaultMaxConcurrentTurns is lanes.max_concurrent_turns when unset: 4 per
// CPU, at least 4 and at most 64. A turn mostly waits for the model, so a
// core can keep several going; a fixed 4 made a burst of 8 new chats on a
// 2-core machine wait for a slot (and for their typing indicator).
var DefaultMaxConcurrentTurns = MaxConcurrentTurnsFor(runtime.NumCPU())

// MaxConcurrentTurnsFor is the default turn concurrency on cpus CPUs.
func MaxConcurrentTurnsFor(cpus int) int {
	return min(max(4*cpus, 4), 64)
}

// Defaults is the configuration of an operator who sets no key: every
// key's default from the key table, decoded as Load decodes it, without a
// file, an environment or what Load derives from them (state_dir,
// codex.cwd, cluster.node_id stay empty). Callers that build a package's
// config by hand take its values from here, so the table stays the one
// place a default is written.
func Defaults() *Config {
	c, _ := decodeDefaults() // every default decodes: TestDefaultsDecode
	return c
}

// decodeDefaults decodes every key's default into a new Config.
func decodeDefaults() (*Config, error) {
	c := &Config{}
	var errs []error
	for _, k := range keys {
		if err := k.decode(c, k.def); err != nil {
			errs = append(errs, err)
		}
	}
	return c, errors.Join(errs...)
}
