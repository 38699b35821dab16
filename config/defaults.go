package config

import (
	"runtime"
	"time"
)

// Defaults of the keys that packages also apply to a zero value of their
// own config (gateway.Config, codex.Options), so a caller that does not set
// a field gets what an operator who does not set the key gets.
const (
	DefaultMaxLive         = 32
	DefaultIdleEvict       = 30 * time.Minute
	DefaultQueueLimit      = 20
	DefaultApprovalTimeout = 10 * time.Minute
	DefaultTurnTimeout     = 30 * time.Minute
	DefaultDrainTimeout    = 60 * time.Second
	DefaultFilesMaxBytes   = 20 << 20 // files.max_bytes: one attachment
	DefaultFilesLaneQuota  = 1 << 30  // files.lane_quota: all of a lane's stored files
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
