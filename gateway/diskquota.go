package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/store"
)

// Disk quota (lanes.disk_quota). A lane's commands write where a
// stranger tells them to, and every lane's directories share one disk with
// the database: one lane's 100 GB file would stop them all. So what a lane
// keeps in its own directories is measured after each of its turns
// (diskusage.go); a lane over its quota is told once, and its next
// messages are refused, not run, until it is under again. The measure is
// taken again before each refusal, so deleting files lifts it at once.
//
// A lane's own directories are the ones no other lane and no operator
// shares: its working directory under codex.cwd (isolated lanes), all its
// worktrees (<state_dir>/worktrees/<lane>), its temporary directory and
// its files directory. A project's checkout is the operator's and is not
// counted.
//
// The quota holds between turns, not within one: a turn can still fill the
// disk while it runs. codex.max_file_size bounds one file, and the
// systemd unit's limits the daemon as a whole (docs/operations.md).

// diskQuota refuses turns of lanes over lanes.disk_quota.
type diskQuota struct {
	limit  int64 // bytes; 0: off
	dirsOf func(sessionKey string) []string
	// measure is measureDirs; tests count its calls.
	measure func(dirs []string) diskUsage
	refuse  refusals
	undo    bool // lanes have worktrees, which /undo restores: the refusal says so
	out     *deliverer
	log     *zap.Logger

	mu    sync.Mutex
	lanes map[string]laneDisk // by session key: the lane's last measurement
}

// laneDisk is what the quota knows of one lane.
type laneDisk struct {
	usage diskUsage
	over  bool // at the last measurement
	told  bool // the lane has heard it is over, since it last was under
}

func newDiskQuota(cfg Config, st refusalStore, j journal, in inbox, out *deliverer, log *zap.Logger) *diskQuota {
	d := &diskQuota{limit: cfg.DiskQuota, measure: measureDirs, undo: cfg.Worktrees != "", out: out, log: log,
		refuse: refusals{journal: j, st: st, inbox: in, out: out, log: log}, lanes: make(map[string]laneDisk)}
	d.dirsOf = laneDirs(cfg)
	return d
}

// laneDirs names the directories that are a lane's own under cfg.
func laneDirs(cfg Config) func(sessionKey string) []string {
	workRoot := ""
	if cfg.Isolation.on() {
		workRoot = cfg.Thread.Cwd // without isolation lanes share codex.cwd: the operator's
	}
	return func(key string) []string {
		var dirs []string
		if workRoot != "" {
			dirs = append(dirs, files.WorkDir(workRoot, key))
		}
		if cfg.Worktrees != "" {
			dirs = append(dirs, filepath.Join(cfg.Worktrees, files.DirName(key)))
		}
		if cfg.Isolation.TempRoot != "" {
			dirs = append(dirs, filepath.Join(cfg.Isolation.TempRoot, files.DirName(key)))
		}
		if cfg.Files != nil {
			dirs = append(dirs, cfg.Files.LaneDir(key))
		}
		return dirs
	}
}

// register adds the refusal before a turn, the measurement after one and
// the /status line; nothing when the quota is off.
func (d *diskQuota) register(h *host) {
	if d.limit <= 0 {
		return
	}
	h.hooks.refuse = append(h.hooks.refuse, d.refuseOver)
	h.hooks.after = append(h.hooks.after, d.afterWork)
	h.hooks.status = append(h.hooks.status, func(_ context.Context, sl store.Lane, b *strings.Builder) {
		b.WriteString(d.status(sl.SessionKey))
	})
}

// check measures the lane now and records it; it returns the lane's state
// before and after.
func (d *diskQuota) check(key string) (was, now laneDisk) {
	u := d.measure(d.dirsOf(key))
	d.mu.Lock()
	defer d.mu.Unlock()
	was = d.lanes[key]
	now = laneDisk{usage: u, over: u.short != "" || u.bytes > d.limit, told: was.told}
	if !now.over {
		now.told = false
	}
	d.lanes[key] = now
	return was, now
}

// refuseOver answers a turn of a lane over its quota instead of running
// it. A lane not known to be under (over at its last measurement, or not
// measured since the daemon started) is measured first, so deleting files
// lifts the refusal and a restart does not forget it. Commands and tasks
// (/new, /undo) still run: they are how a lane gets under again.
func (d *diskQuota) refuseOver(ctx context.Context, l *lane, it item) bool {
	if it.kind != itemTurn {
		return false
	}
	d.mu.Lock()
	last, known := d.lanes[l.key]
	d.mu.Unlock()
	if known && !last.over {
		return false
	}
	was, now := d.check(l.key)
	if !now.over {
		if was.over {
			d.log.Info("lane.disk_quota_lifted", zap.String("lane", l.key), zap.Int64("bytes", now.usage.bytes))
		}
		return false
	}
	d.log.Warn("turn.refused_disk_quota", zap.String("lane", l.key), zap.Int64("inbound", it.inboundID),
		zap.Int64("bytes", now.usage.bytes), zap.Int64("quota", d.limit), zap.String("short", now.usage.short))
	d.markTold(l.key)
	d.refuse.refuse(ctx, l, it, d.refusalText(now.usage))
	return true
}

// afterWork measures the lane once its turn or task is done, and tells it
// the first time it is found over.
func (d *diskQuota) afterWork(ctx context.Context, l *lane, it item) {
	was, now := d.check(l.key)
	switch {
	case now.over && !now.told:
		d.log.Warn("lane.disk_quota_over", zap.String("lane", l.key), zap.Int64("bytes", now.usage.bytes),
			zap.Int64("quota", d.limit), zap.String("short", now.usage.short))
		d.markTold(l.key)
		d.out.notify(ctx, l.addr, replyTarget(it), d.overText(now.usage))
	case !now.over && was.over:
		d.log.Info("lane.disk_quota_lifted", zap.String("lane", l.key), zap.Int64("bytes", now.usage.bytes))
	}
}

func (d *diskQuota) markTold(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ld := d.lanes[key]
	ld.told = true
	d.lanes[key] = ld
}

// overText is the notice of a lane that just went over its quota.
func (d *diskQuota) overText(u diskUsage) string {
	return "This conversation's files " + d.describe(u) + ". Its next messages will not run until files are " +
		"deleted from its working directory, temporary directory or files directory."
}

// refusalText answers a message refused for the quota.
func (d *diskQuota) refusalText(u diskUsage) string {
	how := "(an operator can)"
	if d.undo {
		how = "(an operator can, or /undo restores a worktree as it was before a turn)"
	}
	return "Not run: this conversation's files " + d.describe(u) + ". Delete files from its directories " +
		how + ", then send this again."
}

// describe says how the usage stands against the quota.
func (d *diskQuota) describe(u diskUsage) string {
	if u.short != "" {
		return fmt.Sprintf("could not be measured (%s; at least %s), so they count as over the disk quota of %s (lanes.disk_quota)",
			u.short, approxSize(u.bytes), files.FormatSize(d.limit))
	}
	return fmt.Sprintf("take %s, over the disk quota of %s (lanes.disk_quota)", approxSize(u.bytes), files.FormatSize(d.limit))
}

// status is the lane's /status line: its last measurement, or one taken
// now if there is none.
func (d *diskQuota) status(key string) string {
	d.mu.Lock()
	ld, known := d.lanes[key]
	d.mu.Unlock()
	if !known {
		_, ld = d.check(key)
	}
	line := fmt.Sprintf("Disk: %s of %s (lanes.disk_quota)", approxSize(ld.usage.bytes), files.FormatSize(d.limit))
	switch {
	case ld.usage.short != "":
		line = fmt.Sprintf("Disk: at least %s of %s (lanes.disk_quota), over: %s; messages are refused until files are deleted",
			approxSize(ld.usage.bytes), files.FormatSize(d.limit), ld.usage.short)
	case ld.over:
		line += ", over: messages are refused until files are deleted"
	}
	return line + "\n"
}

// approxSize writes a measured byte count to one decimal: "2.9 MiB".
func approxSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size {
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
