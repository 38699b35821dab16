package telegramtest

import (
	"net/http"
	"strings"
	"sync"
)

// Held is a request the fake holds before handling it (see HoldText).
type Held struct {
	method, contains string
	arrived          chan struct{}
	decided          chan struct{}
	once             sync.Once
	drop             bool
}

// Arrived is closed when the held request has reached the fake.
func (h *Held) Arrived() <-chan struct{} { return h.arrived }

// Release lets the held request be handled, even if its client is gone.
func (h *Held) Release() { h.once.Do(func() { close(h.decided) }) }

// Drop discards the held request unhandled, as if the connection died
// before it reached Telegram: nothing is sent, and the client (if still
// there) sees the connection close.
func (h *Held) Drop() {
	h.once.Do(func() {
		h.drop = true
		close(h.decided)
	})
}

// HoldText holds the next call of method (e.g. "sendMessage") whose text
// contains contains, until Release or Drop. The test's end releases it.
func (s *Server) HoldText(method, contains string) *Held {
	h := &Held{method: strings.ToLower(method), contains: contains,
		arrived: make(chan struct{}), decided: make(chan struct{})}
	s.t.Cleanup(h.Release)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holds = append(s.holds, h)
	return h
}

// hold applies a matching hold to the call; it reports whether the call
// is to be handled.
func (s *Server) hold(w http.ResponseWriter, method string, p map[string]string) bool {
	s.mu.Lock()
	var h *Held
	for i, c := range s.holds {
		if c.method == method && strings.Contains(p["text"], c.contains) {
			h = c
			s.holds = append(s.holds[:i:i], s.holds[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	if h == nil {
		return true
	}
	close(h.arrived)
	<-h.decided
	if !h.drop {
		return true
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
	return false
}
