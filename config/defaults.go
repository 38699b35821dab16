package config

import (
	"runtime"
	"time"
)

// Every default lives here once. Packages that apply a default to a zero
// value of their own config (gateway.Config, codex.Options) use these
// constants, so a caller that does not set a field gets what an operator
// who does not set the key gets.
//
// One convention for "never": a zero value means off/never where the key
// documents one (lanes.idle_evict, lanes.compact_at, lanes.rotate,
// lanes.max_per_minute), and the packages' fields read it the same way. Every other key must be positive,
// so there a zero field means "take the default below". No field uses a
// negative value as a sentinel.

// Defaults of configuration keys (the key is named beside each).
const (
	DefaultMaxLive         = 32               // lanes.max_live
	DefaultIdleEvict       = 30 * time.Minute // lanes.idle_evict
	DefaultQueueLimit      = 20               // lanes.queue_limit
	DefaultMaxPerMinute    = 20               // lanes.max_per_minute (0: no limit)
	DefaultContextMessages = 30               // lanes.context_messages
	DefaultBusyMode        = BusyQueue        // lanes.busy_mode
	DefaultVerbose         = VerboseSummary   // lanes.verbose
	DefaultApprovals       = ApprovalsNever   // codex.approvals
	DefaultIsolation       = IsolationLanes   // codex.isolation
	DefaultApprovalTimeout = 10 * time.Minute // codex.approval_timeout
	DefaultQuestionTimeout = 30 * time.Minute // codex.question_timeout

	DefaultScheduleMinInterval = time.Minute      // schedules.min_interval
	DefaultScheduleCatchUp     = time.Hour        // schedules.catch_up
	DefaultSchedulesPerLane    = 20               // schedules.max_per_lane
	DefaultTurnTimeout         = 30 * time.Minute // codex.turn_timeout
	DefaultResumeTimeout       = 10 * time.Minute // codex.resume_timeout: generous on purpose, ctx can cancel
	DefaultStartTimeout        = 30 * time.Second // codex.start_timeout: initialize and thread/start
	DefaultDrainTimeout        = 60 * time.Second // shutdown.drain_timeout
	DefaultFilesMaxBytes       = 20 << 20         // files.max_bytes: one attachment
	DefaultFilesLaneQuota      = 1 << 30          // files.lane_quota: all of a lane's stored files
	DefaultLaneDiskQuota       = 5 << 30          // lanes.disk_quota: a lane's own directories
	// codex.max_processes: RLIMIT_NPROC counts every task of the daemon's
	// uid, not the app-server's alone; above the unit's TasksMax (4096) so
	// under systemd the cgroup trips first, and far above the few hundred
	// tasks a desktop user's session runs besides.
	DefaultCodexMaxProcesses = 8192
	DefaultCodexMaxFileSize  = 4 << 30 // codex.max_file_size: above any rollout or build artifact, below a filled disk
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
