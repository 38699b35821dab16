package discordtest

import "time"

// WaitShard blocks until shard id has a client connected (connected true)
// or has none (false), or the timeout passes; it reports whether the
// condition was met.
func (s *Server) WaitShard(id int, connected bool, timeout time.Duration) bool {
	g := s.shardState(id)
	deadline := time.After(timeout)
	for {
		g.mu.Lock()
		changed, now := g.changed, g.conn != nil
		g.mu.Unlock()
		if now == connected {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}
