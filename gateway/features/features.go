// Package features is the list of the gateway's feature packages, each
// built from its settings. The daemon and the tests that run a whole
// gateway take the list from here; the core names no feature. Adding a
// feature is its package and its line in List.
package features

import (
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/feature/btw"
	"github.com/gatewayd/gatewayd/gateway/feature/compact"
	"github.com/gatewayd/gatewayd/gateway/feature/confine"
	"github.com/gatewayd/gatewayd/gateway/feature/diff"
	"github.com/gatewayd/gatewayd/gateway/feature/diskquota"
	"github.com/gatewayd/gatewayd/gateway/feature/fork"
	"github.com/gatewayd/gatewayd/gateway/feature/plan"
	"github.com/gatewayd/gatewayd/gateway/feature/review"
	"github.com/gatewayd/gatewayd/gateway/feature/rotate"
	"github.com/gatewayd/gatewayd/gateway/feature/senderlimit"
	"github.com/gatewayd/gatewayd/gateway/feature/sendfile"
	"github.com/gatewayd/gatewayd/gateway/feature/threads"
	"github.com/gatewayd/gatewayd/gateway/feature/undo"
	"github.com/gatewayd/gatewayd/gateway/feature/usage"
	"github.com/gatewayd/gatewayd/gateway/feature/voice"
)

// Settings are the features' configuration, as the config file gives it.
type Settings struct {
	Rotate       config.Rotate // lanes.rotate
	MaxPerMinute int           // lanes.max_per_minute
	DiskQuota    int64         // lanes.disk_quota, in bytes
	Voice        voice.Config  // voice.*
	// CodexHome is the app-server's CODEX_HOME, named in /handoff's
	// command ("": not named).
	CodexHome string
	// Compact is when a lane's thread is compacted (lanes.compact_at).
	Compact compact.Config
}

// Store is what the features use of the store: the union of their own
// narrow interfaces, each checked against *store.Store in its package.
type Store interface {
	rotate.Store
	senderlimit.Store
	btw.Store
	plan.Store
	undo.Store
	diff.Store
	fork.Store
	threads.Store
	usage.Store
	compact.Store
}

// Runtime is what the features use of codex: the union of their own
// narrow interfaces, each checked against *codex.Client in its package.
type Runtime interface {
	btw.Runtime
	undo.Runtime
	fork.Runtime
	threads.Runtime
	usage.Runtime
	compact.Runtime
}

// List builds every feature, in the order they register (the order of
// their commands after the core's, and of their /status lines).
func List(s Settings, st Store, cx Runtime) []ext.Feature {
	return []ext.Feature{
		usage.New(st, cx, nil), // its /status lines and then compaction's come first, as before the features
		compact.New(s.Compact, st, cx),
		rotate.New(s.Rotate, st),
		senderlimit.New(s.MaxPerMinute, st),
		review.New(),
		btw.New(st, cx),
		plan.New(st),
		undo.New(st, cx),
		diff.New(st),
		fork.New(st, cx),
		threads.New(st, cx, s.CodexHome),
		diskquota.New(s.DiskQuota),
		confine.New(), // codex.isolation is the core's (gateway.Config.Isolation): it places the lanes' directories
		voice.New(s.Voice),
		sendfile.New(), // the core's files store (gateway.Config.Files) keeps what it sends
	}
}
