package gateway

// Isolation is codex.isolation as the gateway applies it. The core places
// an isolated lane's working directory under codex.cwd and names its own
// directories (ext.LaneDirs); the feature package confine sends them as the
// lane's roots with its thread and turns.
type Isolation struct {
	// Profile is the permissions profile the app-server was started with
	// (codex.LaneProfile); "" leaves lanes unconfined (codex.isolation:
	// none, or a danger-full-access sandbox).
	Profile string
	// TempRoot holds each lane's temporary directory, its commands'
	// TMPDIR and HOME (/tmp and the daemon's home are not in the sandbox):
	// <state_dir>/tmp.
	TempRoot string
}

func (i Isolation) on() bool { return i.Profile != "" }
