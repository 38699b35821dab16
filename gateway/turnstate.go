package gateway

import "github.com/gatewayd/gatewayd/store"

// turnState is the item being processed; commands use it to stop the turn.
// Its fields are guarded by its lane's mu, which also guards which item is
// the lane's current one: its methods take that lock, and the ones that
// change or take what the turn holds act only while it is still current
// (lane.cur), as the lane's item-wide sections did.
type turnState struct {
	lane     *lane // the lane it runs on (its mu guards all below)
	kind     itemKind
	threadID string
	// superseded: busy mode interrupt asked this turn to stop; a turn not
	// yet started is not started, one starting is interrupted at once.
	superseded bool
	// steer holds the messages steered into this turn (busy mode steer).
	steer    steerLog
	discard  bool // the lane was reset: skip or discard the result
	cutOff   bool // shutdown interrupted it: leave it journaled
	answered bool // the answer is being committed; nothing waits for it
	// requester and requesterName: the item's (item.requester).
	requester, requesterName string
	msgID                    string // the item's platform message id
	// waitPinged: the requester was pinged that the turn waits for them
	// (an approval or a question); once per turn.
	waitPinged bool
	// finishing: the turn's codex work is over and its answer is being
	// shown and committed (set before the work view's closing line, whose
	// buttons may be pressed at once).
	finishing bool
	// retry: the item reruns the lane's turn to retry (no second rerun
	// is queued while it runs).
	retry bool
	// compacting: the thread's active codex turn is a compaction run
	// before this turn; nothing may be steered into it or interrupt it.
	compacting bool
	// dir is the turn's working directory, where send_file resolves
	// relative paths; files are the files the agent sent (sendfile.go),
	// committed with the turn. Both guarded by lane.mu.
	dir   string
	files []store.OutboxMessage
	// stream is the turn's streamer, held once the agent sent a file.
	stream *streamer
	// edits of the item's message before codex has its turn (edits.go).
	edits turnEdits
}

// runningLocked reports whether c is still its lane's current item; the
// lane's mu is held.
func (c *turnState) runningLocked() bool { return c.lane.cur == c }

// isDiscarded: the lane was reset while the item ran.
func (c *turnState) isDiscarded() bool {
	c.lane.mu.Lock()
	defer c.lane.mu.Unlock()
	return c.runningLocked() && c.discard
}

// isCutOff: shutdown interrupted the item; it stays journaled.
func (c *turnState) isCutOff() bool {
	c.lane.mu.Lock()
	defer c.lane.mu.Unlock()
	return c.runningLocked() && c.cutOff
}

// isSuperseded reports whether busy mode interrupt asked the turn to stop.
func (c *turnState) isSuperseded() bool {
	c.lane.mu.Lock()
	defer c.lane.mu.Unlock()
	return c.runningLocked() && c.superseded
}

// setThread records the thread the item runs on.
func (c *turnState) setThread(thread string) {
	c.lane.mu.Lock()
	if c.runningLocked() {
		c.threadID = thread
	}
	c.lane.mu.Unlock()
}

// setDir records the turn's working directory, where send_file resolves
// relative paths.
func (c *turnState) setDir(dir string) {
	c.lane.mu.Lock()
	if c.runningLocked() {
		c.dir = dir
	}
	c.lane.mu.Unlock()
}

// setStream records the turn's streamer, for the files the agent sends
// while it runs.
func (c *turnState) setStream(s *streamer) {
	c.lane.mu.Lock()
	if c.runningLocked() {
		c.stream = s
	}
	c.lane.mu.Unlock()
}

// setCompacting marks whether the thread's active codex turn is a
// compaction run before this turn, so nothing steers into it or interrupts
// it.
func (c *turnState) setCompacting(on bool) {
	c.lane.mu.Lock()
	if c.runningLocked() {
		c.compacting = on
	}
	c.lane.mu.Unlock()
}

// setFinishing marks the turn as past its codex work.
func (c *turnState) setFinishing() {
	c.lane.mu.Lock()
	if c.runningLocked() {
		c.finishing = true
	}
	c.lane.mu.Unlock()
}

// retrySettled records that the running rerun is committed: from here a
// /retry asks the store, which has what the rerun left to retry, instead
// of being told the rerun is still queued while its reply goes out.
func (c *turnState) retrySettled() {
	c.lane.mu.Lock()
	defer c.lane.mu.Unlock()
	if c.runningLocked() {
		c.retry = false
	}
}

// markAnswered marks the turn answered (nothing waits for it any more)
// and, in the same section so no file slips in after, takes the files the
// agent sent, addressed like reply.
func (c *turnState) markAnswered(reply *store.OutboxMessage) []store.OutboxMessage {
	c.lane.mu.Lock()
	defer c.lane.mu.Unlock()
	if !c.runningLocked() {
		return nil
	}
	c.answered = true
	return turnFiles(c, reply)
}

// addSentFile adds a file the agent sent if c is still the lane's turn and
// not yet answered, holding its stream so the preview waits for the file.
// It reports whether the file was taken; the check and the append are one
// section so finish's markAnswered cannot miss it.
func (c *turnState) addSentFile(f store.OutboxMessage) bool {
	c.lane.mu.Lock()
	defer c.lane.mu.Unlock()
	if !c.runningLocked() || c.answered {
		return false
	}
	c.files = append(c.files, f)
	if c.stream != nil {
		c.stream.Hold()
	}
	return true
}

// addFiles adds files (codex's generated images) to the turn's; it
// reports whether the turn was still there to take them.
func (c *turnState) addFiles(files []store.OutboxMessage) bool {
	c.lane.mu.Lock()
	defer c.lane.mu.Unlock()
	if !c.runningLocked() {
		return false
	}
	c.files = append(c.files, files...)
	return true
}
