package gateway

import "sync"

// liveThread is a lane's thread in the app-server: which one is loaded,
// whether a reset generation left it to release, and when the lane last
// used it, for idle eviction. It is guarded by its lane's mu (which it
// points to), the lock of the lane's work too, so the lane can ask about
// both in one section (is it idle with a thread to evict, may it die).
type liveThread struct {
	mu       *sync.Mutex // the lane's
	thread   string      // thread loaded in the app-server; "" when not live
	stale    bool        // thread belongs to a reset generation: release it
	lastUsed int64       // unix nanos of the last turn, for idle eviction
}

// set records that thread is loaded, last used at usedAt (unix nanos).
func (lt *liveThread) set(thread string, usedAt int64) {
	lt.mu.Lock()
	lt.thread = thread
	lt.lastUsed = usedAt
	lt.mu.Unlock()
}

// markStale marks the lane's thread as belonging to a reset generation, so
// it is released.
func (lt *liveThread) markStale() {
	lt.mu.Lock()
	lt.stale = true
	lt.mu.Unlock()
}

// retire marks the loaded thread (if any) stale, so it is released before
// the next thread starts.
func (lt *liveThread) retire() {
	lt.mu.Lock()
	lt.retireLocked()
	lt.mu.Unlock()
}

// retireLocked is retire with the lane's mu held.
func (lt *liveThread) retireLocked() {
	if lt.thread != "" {
		lt.stale = true
	}
}

// takeStale detaches and returns a thread a reset generation left loaded;
// "" when there is none. Either way the stale mark is cleared.
func (lt *liveThread) takeStale() string {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if !lt.stale || lt.thread == "" {
		lt.stale = false
		return ""
	}
	return lt.detachLocked()
}

// detachLocked forgets the loaded thread and its stale mark and returns
// the thread; the lane's mu is held.
func (lt *liveThread) detachLocked() string {
	thread := lt.thread
	lt.thread, lt.stale = "", false
	return thread
}

// usedBefore reports whether the lane's last turn ended at or before
// cutoff (unix nanos). Called under laneTable.mu (lock order).
func (lt *liveThread) usedBefore(cutoff int64) bool {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.lastUsed <= cutoff
}
