// Package diskquota is lanes.disk_quota: what a lane may keep in its own
// directories before its turns are refused.
package diskquota

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/ext"
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

// Quota refuses turns of lanes over lanes.disk_quota.
type Quota struct {
	limit int64 // bytes; 0: off
	// measure is measureDirs; tests count its calls.
	measure func(dirs []string) diskUsage
	host    ext.Host
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

// New is a quota of limit bytes per lane (0: off).
func New(limit int64) *Quota {
	return &Quota{limit: limit, measure: measureDirs, lanes: make(map[string]laneDisk)}
}

// Name is the feature's name.
func (d *Quota) Name() string { return "diskquota" }

// Register adds the refusal before a turn, the measurement after one and
// the /status line; nothing when the quota is off.
func (d *Quota) Register(h ext.Host) error {
	d.host, d.log = h, h.Logger()
	if d.limit <= 0 {
		return nil
	}
	h.OnRefuse(d.refuseOver)
	h.OnAfter(d.afterWork)
	h.OnStatus(func(_ context.Context, sl store.Lane, b *strings.Builder) {
		b.WriteString(d.status(sl.SessionKey))
	})
	return nil
}

// check measures the lane now and records it; it returns the lane's state
// before and after.
func (d *Quota) check(key string) (was, now laneDisk) {
	u := d.measure(d.host.LaneDirs(key).All())
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
func (d *Quota) refuseOver(_ context.Context, l ext.Lane, it ext.Item) (reason string) {
	if !it.Turn {
		return ""
	}
	key := l.Key()
	d.mu.Lock()
	last, known := d.lanes[key]
	d.mu.Unlock()
	if known && !last.over {
		return ""
	}
	was, now := d.check(key)
	if !now.over {
		if was.over {
			d.log.Info("lane.disk_quota_lifted", zap.String("lane", key), zap.Int64("bytes", now.usage.bytes))
		}
		return ""
	}
	d.log.Warn("turn.refused_disk_quota", zap.String("lane", key), zap.Int64("inbound", it.InboundID),
		zap.Int64("bytes", now.usage.bytes), zap.Int64("quota", d.limit), zap.String("short", now.usage.short))
	d.markTold(key)
	return d.refusalText(now.usage, d.host.LaneDirs(key).Worktrees != "")
}

// afterWork measures the lane once its turn or task is done, and tells it
// the first time it is found over.
func (d *Quota) afterWork(ctx context.Context, l ext.Lane, it ext.Item) {
	key := l.Key()
	was, now := d.check(key)
	switch {
	case now.over && !now.told:
		d.log.Warn("lane.disk_quota_over", zap.String("lane", key), zap.Int64("bytes", now.usage.bytes),
			zap.Int64("quota", d.limit), zap.String("short", now.usage.short))
		d.markTold(key)
		d.host.Notify(ctx, l.Address(), it.ReplyTo, d.overText(now.usage))
	case !now.over && was.over:
		d.log.Info("lane.disk_quota_lifted", zap.String("lane", key), zap.Int64("bytes", now.usage.bytes))
	}
}

func (d *Quota) markTold(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ld := d.lanes[key]
	ld.told = true
	d.lanes[key] = ld
}

// overText is the notice of a lane that just went over its quota.
func (d *Quota) overText(u diskUsage) string {
	return "This conversation's files " + d.describe(u) + ". Its next messages will not run until files are " +
		"deleted from its working directory, temporary directory or files directory."
}

// refusalText answers a message refused for the quota; worktrees: the
// lane has worktrees, which /undo restores.
func (d *Quota) refusalText(u diskUsage, worktrees bool) string {
	how := "(an operator can)"
	if worktrees {
		how = "(an operator can, or /undo restores a worktree as it was before a turn)"
	}
	return "Not run: this conversation's files " + d.describe(u) + ". Delete files from its directories " +
		how + ", then send this again."
}

// describe says how the usage stands against the quota.
func (d *Quota) describe(u diskUsage) string {
	if u.short != "" {
		return fmt.Sprintf("could not be measured (%s; at least %s), so they count as over the disk quota of %s (lanes.disk_quota)",
			u.short, approxSize(u.bytes), files.FormatSize(d.limit))
	}
	return fmt.Sprintf("take %s, over the disk quota of %s (lanes.disk_quota)", approxSize(u.bytes), files.FormatSize(d.limit))
}

// status is the lane's /status line: its last measurement, or one taken
// now if there is none.
func (d *Quota) status(key string) string {
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
