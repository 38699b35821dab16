package gateway

// laneSnapshot is a lane's work and thread as one section of lane.mu saw
// them. The questions asked of a lane's business (is it idle, may a command
// act now, would a message run next) are answered on one snapshot, so each
// answer reads its fields together, as it did under the lock.
type laneSnapshot struct {
	queued    int    // items waiting in the queue
	worker    bool   // a worker goroutine owns the queue
	running   bool   // an item is being processed
	finishing bool   // the running item's codex work is over (turnState.finishing)
	curThread string // the thread the running item runs on; "" when none
	thread    string // the thread loaded in the app-server; "" when not live
	stale     bool   // the loaded thread belongs to a reset generation
	intake    int    // deliveries holding the lane's intake lock
}

// snapshot takes the lane's snapshot under its lock.
func (l *lane) snapshot() laneSnapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snapshotLocked()
}

// snapshotLocked is snapshot with l.mu held.
func (l *lane) snapshotLocked() laneSnapshot {
	s := laneSnapshot{queued: l.queue.Len(), worker: l.worker, thread: l.live.thread, stale: l.live.stale, intake: l.intake}
	if l.cur != nil {
		s.running, s.finishing, s.curThread = true, l.cur.finishing, l.cur.threadID
	}
	return s
}

// idle: the lane has no work at all (no worker, nothing queued or running,
// no delivery under way), so its thread may be evicted and the lane forgotten.
func (s laneSnapshot) idle() bool {
	return !s.worker && s.queued == 0 && !s.running && s.intake == 0
}

// hasWork: an item runs or waits in the lane's queue.
func (s laneSnapshot) hasWork() bool { return s.queued > 0 || s.running }

// midWork: an item waits in the lane's queue, or one runs that is not just
// finishing: what /undo, /fork, /attach and /handoff refuse to act under. A
// command queued behind a finishing turn runs right after it, on the thread
// and files that turn left.
func (s laneSnapshot) midWork() bool { return s.queued > 0 || (s.running && !s.finishing) }

// freeForTurn: a message queued now would run next on the lane: nothing
// running or queued, no stale thread to release first.
func (s laneSnapshot) freeForTurn() bool { return !s.running && s.queued == 0 && !s.stale }

// state is the lane's live work, for the operator's view.
func (s laneSnapshot) state() LaneState { return LaneState{Queued: s.queued, Running: s.running} }
