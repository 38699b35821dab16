package loadgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// clockTick is USER_HZ, 100 on every Linux that Go supports here; /proc
// reports CPU time in these ticks.
const clockTick = 10 * time.Millisecond

// ProcStat is what one process has used so far.
type ProcStat struct {
	PID  int
	PPID int
	CPU  time.Duration // user + system, its reaped children's included
	Sys  time.Duration // of CPU, the process's own system time (stime): syscalls such as fdatasync, writes, polling
	RSS  int64         // resident bytes
}

// ReadStat parses /proc/<pid>/stat.
func ReadStat(pid int) (ProcStat, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ProcStat{}, fmt.Errorf("loadgen: %w", err)
	}
	return parseStat(pid, raw)
}

// parseStat reads the fields after the command name, which may itself hold
// spaces and parentheses: they start after the last ')'.
func parseStat(pid int, raw []byte) (ProcStat, error) {
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return ProcStat{}, fmt.Errorf("loadgen: /proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(raw[end+1:])
	// f[0] is field 3 (state): field n is f[n-3].
	const ppid, utime, stime, cstime, rss = 4 - 3, 14 - 3, 15 - 3, 17 - 3, 24 - 3
	if len(f) <= rss {
		return ProcStat{}, fmt.Errorf("loadgen: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	num := func(i int) (int64, error) { return strconv.ParseInt(string(f[i]), 10, 64) }
	st := ProcStat{PID: pid}
	var ticks, sysTicks int64
	for i := utime; i <= cstime; i++ {
		v, err := num(i)
		if err != nil {
			return ProcStat{}, fmt.Errorf("loadgen: /proc/%d/stat field %d: %w", pid, i+3, err)
		}
		ticks += v
		if i == stime {
			sysTicks = v
		}
	}
	pp, err := num(ppid)
	if err != nil {
		return ProcStat{}, fmt.Errorf("loadgen: /proc/%d/stat ppid: %w", pid, err)
	}
	pages, err := num(rss)
	if err != nil {
		return ProcStat{}, fmt.Errorf("loadgen: /proc/%d/stat rss: %w", pid, err)
	}
	st.PPID = int(pp)
	st.CPU = time.Duration(ticks) * clockTick
	st.Sys = time.Duration(sysTicks) * clockTick
	st.RSS = pages * int64(os.Getpagesize())
	return st, nil
}

// Descendants returns the stats of every live process below pid (not pid
// itself), found by scanning /proc for parent links.
func Descendants(pid int) ([]ProcStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	children := make(map[int][]ProcStat)
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := ReadStat(p)
		if err != nil {
			continue // exited while we looked
		}
		children[st.PPID] = append(children[st.PPID], st)
	}
	var out []ProcStat
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c.PID)
		}
	}
	return out, nil
}

// Usage is gatewayd's own use and that of its children (the app-server).
type Usage struct {
	GatewayCPU, ChildCPU time.Duration
	GatewaySys           time.Duration // of GatewayCPU, system time
	GatewaySysmon        time.Duration // of GatewayCPU, the Go runtime's sysmon thread's
	GatewayRSS, ChildRSS int64
}

// Measure reads gatewayd's and its process tree's usage now. The gateway's
// CPU excludes its children's: cutime/cstime count only reaped ones, and
// the app-server is not reaped while it runs.
func Measure(pid int) (Usage, error) {
	self, err := ReadStat(pid)
	if err != nil {
		return Usage{}, err
	}
	kids, err := Descendants(pid)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{GatewayCPU: self.CPU, GatewaySys: self.Sys, GatewayRSS: self.RSS}
	if u.GatewaySysmon, err = sysmonCPU(pid); err != nil {
		return Usage{}, err
	}
	for _, k := range kids {
		u.ChildCPU += k.CPU
		u.ChildRSS += k.RSS
	}
	return u, nil
}

// sysmonCPU is the CPU of the Go runtime's sysmon thread in process pid:
// the first thread runtime.main starts, so the lowest thread id after the
// main thread's. It wakes every 20 µs while any goroutine runs or sits in a
// syscall, so its share shows what the daemon's bursts of work cost beyond
// the work itself.
func sysmonCPU(pid int) (time.Duration, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("loadgen: %w", err)
	}
	second := 0
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil || tid == pid {
			continue
		}
		if second == 0 || tid < second {
			second = tid
		}
	}
	if second == 0 {
		return 0, nil
	}
	raw, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(second), "stat"))
	if err != nil {
		return 0, fmt.Errorf("loadgen: %w", err)
	}
	st, err := parseStat(second, raw)
	if err != nil {
		return 0, err
	}
	return st.CPU, nil
}
