package gateway

import "sync"

// laneTable is the in-memory index of lanes: every lane with work or a
// loaded thread, and the LRU order of the live ones (those whose thread is
// loaded in the app-server). It owns the locking of both; a lane's own
// fields stay under lane.mu, which only lane.go takes. Lock order:
// laneTable.mu before lane.mu (forget marks a lane dead inside the table's
// section, atomic with the map change).
type laneTable struct {
	mu    sync.Mutex
	lanes map[string]*lane
	lru   lruList // live lanes, most recently used first
}

func newLaneTable() *laneTable { return &laneTable{lanes: make(map[string]*lane)} }

// get returns the lane for addr, creating its in-memory state.
func (t *laneTable) get(addr Address) *lane {
	key := addr.SessionKey()
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.lanes[key]
	if l == nil {
		l = newLane(key, addr)
		t.lanes[key] = l
	}
	return l
}

// lookup returns the lane of key if it is in memory.
func (t *laneTable) lookup(key string) *lane {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lanes[key]
}

// forget drops a lane that has nothing left: no work and no loaded
// thread. A lane forgotten is marked dead, so a caller still holding it
// moves to its successor.
func (t *laneTable) forget(l *lane) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lanes[l.key] == l && !l.inLRU && l.dieIfEmpty() {
		delete(t.lanes, l.key)
	}
}

// each calls fn for every lane in memory, under the table's lock: fn may
// take lane.mu but nothing of the table.
func (t *laneTable) each(fn func(l *lane)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.lanes {
		fn(l)
	}
}

// ofThread finds the lane whose thread (loaded or running) is threadID.
func (t *laneTable) ofThread(threadID string) *lane {
	if threadID == "" {
		return nil
	}
	var found *lane
	t.each(func(l *lane) {
		if found == nil && l.runsThread(threadID) {
			found = l
		}
	})
	return found
}

// requesterOfThread is who sent the message whose turn runs on threadID.
func (t *laneTable) requesterOfThread(threadID string) (id, name string) {
	if l := t.ofThread(threadID); l != nil {
		return l.requesterOf(threadID)
	}
	return "", ""
}

// waitPingOfThread is lane.waitPing of the lane whose thread is threadID.
func (t *laneTable) waitPingOfThread(threadID string) (user, msgID string, ok bool) {
	if l := t.ofThread(threadID); l != nil {
		return l.waitPing(threadID)
	}
	return "", "", false
}

// touch makes the lane the most recently used live lane.
func (t *laneTable) touch(l *lane) {
	t.mu.Lock()
	t.lru.pushFront(l)
	t.mu.Unlock()
}

// unlive takes the lane out of the live order (its thread was released).
func (t *laneTable) unlive(l *lane) {
	t.mu.Lock()
	t.lru.remove(l)
	t.mu.Unlock()
}

// live counts the lanes whose thread is loaded.
func (t *laneTable) live() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lru.n
}

// overLimit returns how many live lanes exceed limit, and the least
// recently used ones other than keep to try evicting, oldest first, with
// spares for those that turn out busy.
func (t *laneTable) overLimit(limit int, keep *lane) (excess int, candidates []*lane) {
	t.mu.Lock()
	defer t.mu.Unlock()
	excess = t.lru.n - limit
	for v := t.lru.tail; v != nil && len(candidates) < excess+16; v = v.prev {
		if v != keep {
			candidates = append(candidates, v)
		}
	}
	return excess, candidates
}

// usedBefore returns the live lanes last used at or before cutoff (unix
// nanos), oldest first.
func (t *laneTable) usedBefore(cutoff int64) []*lane {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*lane
	for v := t.lru.tail; v != nil; v = v.prev {
		if v.live.usedBefore(cutoff) {
			out = append(out, v)
		}
	}
	return out
}

// lruList is an intrusive doubly linked list of live lanes, guarded by
// laneTable.mu.
type lruList struct {
	head, tail *lane
	n          int
}

func (q *lruList) remove(l *lane) {
	if !l.inLRU {
		return
	}
	if l.prev != nil {
		l.prev.next = l.next
	} else {
		q.head = l.next
	}
	if l.next != nil {
		l.next.prev = l.prev
	} else {
		q.tail = l.prev
	}
	l.prev, l.next, l.inLRU = nil, nil, false
	q.n--
}

func (q *lruList) pushFront(l *lane) {
	q.remove(l)
	l.next = q.head
	if q.head != nil {
		q.head.prev = l
	}
	q.head = l
	if q.tail == nil {
		q.tail = l
	}
	l.inLRU = true
	q.n++
}
