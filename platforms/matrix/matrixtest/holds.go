package matrixtest

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// Held is a request the fake holds before handling it (see Hold).
type Held struct {
	route    string
	contains string
	arrived  chan struct{}
	release  chan struct{}
	once     sync.Once
	drop     bool
}

// Arrived is closed when the held request reached the fake.
func (h *Held) Arrived() <-chan struct{} { return h.arrived }

// Release lets the held request be handled, even when its client is gone
// (it was on the wire: the homeserver stores it).
func (h *Held) Release() { h.once.Do(func() { close(h.release) }) }

// Drop discards the held request unhandled, as if the connection died
// before it reached the homeserver.
func (h *Held) Drop() {
	h.once.Do(func() {
		h.drop = true
		close(h.release)
	})
}

// Hold holds the next request of route whose body contains contains
// until Release or Drop (or the server closes).
func (s *Server) Hold(route, contains string) *Held {
	h := &Held{route: route, contains: contains, arrived: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = append(s.held, h)
	return h
}

// holdRequest blocks a request matching a hold; it reports whether the
// request must be dropped (and the connection hung up).
func (s *Server) holdRequest(r *http.Request, route string) bool {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	var h *Held
	for i, c := range s.held {
		if c.route == route && bytes.Contains(body, []byte(c.contains)) {
			h = c
			s.held = append(s.held[:i:i], s.held[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	if h == nil {
		return false
	}
	close(h.arrived)
	select {
	case <-h.release:
	case <-s.closing:
		return true
	}
	return h.drop
}

// Shown is what a client displays of sender's messages in room, oldest
// first: edits applied, redacted and edit events left out.
func (s *Server) Shown(room, sender string) []string {
	evs := s.Events(room)
	text := map[string]string{}
	var order []string
	redacted := map[string]bool{}
	for _, e := range evs {
		if e.Type == "m.room.redaction" {
			redacted[e.Redacts] = true
		}
		if e.Sender != sender || e.Type != "m.room.message" {
			continue
		}
		rel, _ := e.Content["m.relates_to"].(map[string]any)
		if rel["rel_type"] == "m.replace" {
			if nc, ok := e.Content["m.new_content"].(map[string]any); ok {
				text[rel["event_id"].(string)], _ = nc["body"].(string)
			}
			continue
		}
		text[e.ID], _ = e.Content["body"].(string)
		order = append(order, e.ID)
	}
	var out []string
	for _, id := range order {
		if !redacted[id] {
			out = append(out, text[id])
		}
	}
	return out
}
