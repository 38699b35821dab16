package gateway

// LaneState is a lane's live work, for the operator's view.
type LaneState struct {
	Queued  int  // messages waiting behind the current one (parked ones included)
	Running bool // an item (a turn or a compaction) is being processed
}

// LaneState returns the live work of the lane with session key key; a lane
// not in memory has none. It takes two short locks and never waits on a
// turn, so listing every lane stays cheap.
func (g *Gateway) LaneState(key string) LaneState {
	l := g.lanes.lookup(key)
	if l == nil {
		return LaneState{}
	}
	return l.snapshot().state()
}
