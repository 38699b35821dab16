package config

import "time"

// Defaults of the keys that packages also apply to a zero value of their
// own config (gateway.Config, codex.Options), so a caller that does not set
// a field gets what an operator who does not set the key gets.
const (
	DefaultMaxLive            = 32
	DefaultIdleEvict          = 30 * time.Minute
	DefaultQueueLimit         = 20
	DefaultMaxConcurrentTurns = 4
	DefaultApprovalTimeout    = 10 * time.Minute
	DefaultTurnTimeout        = 30 * time.Minute
	DefaultDrainTimeout       = 60 * time.Second
	DefaultFilesMaxBytes      = 20 << 20 // files.max_bytes: one attachment
	DefaultFilesLaneQuota     = 1 << 30  // files.lane_quota: all of a lane's stored files
)
