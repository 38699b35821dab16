package matrixtest

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// sync serves /sync: since "" is an initial sync (state and the last
// `limit` events of each joined room); "s<n>" is everything after log
// position n, the last `limit` per room with limited/prev_batch when there
// were more. With nothing new it waits up to `timeout` ms.
func (s *Server) sync(w http.ResponseWriter, r *http.Request) {
	if s.takeHold() {
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	}
	q := r.URL.Query()
	c := callerOf(r)
	timeout, _ := strconv.Atoi(q.Get("timeout"))
	deadline := time.NewTimer(time.Duration(timeout) * time.Millisecond)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		resp, any := s.syncLocked(c, q.Get("since"), q.Get("filter"))
		wake := s.wake
		s.mu.Unlock()
		if any || q.Get("since") == "" || timeout <= 0 {
			s.mu.Lock()
			salt := any && q.Get("since") != "" && s.takeNullsLocked()
			s.mu.Unlock()
			if salt {
				saltSync(resp)
			}
			writeJSON(w, 200, resp)
			return
		}
		select {
		case <-wake:
		case <-deadline.C:
			timeout = 0
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

func (s *Server) syncLocked(c caller, since, filter string) (map[string]any, bool) {
	limit := s.filters[filter]
	if limit <= 0 {
		limit = 10
	}
	after := tokenPos(since, 0)
	join, invite := map[string]any{}, map[string]any{}
	for _, rm := range s.rooms {
		switch rm.members[c.user] {
		case "join":
			if jr := s.joinedRoomLocked(rm, c.user, c.token, since == "", after, limit); jr != nil {
				join[rm.id] = jr
			}
		case "invite":
			inv := rm.state["m.room.member|"+c.user]
			if since == "" || inv.Pos > after {
				invite[rm.id] = map[string]any{"invite_state": map[string]any{"events": s.strippedLocked(rm, c.token)}}
			}
		}
	}
	resp := map[string]any{"next_batch": fmt.Sprintf("s%d", len(s.log)),
		"rooms": map[string]any{"join": join, "invite": invite, "leave": map[string]any{}}}
	return resp, len(join)+len(invite) > 0
}

func (s *Server) joinedRoomLocked(rm *room, user, token string, initial bool, after, limit int) map[string]any {
	// A room joined since the last sync comes as a new room does: its
	// recent history with the join, as Synapse sends it.
	if join := rm.state["m.room.member|"+user]; join != nil && join.Pos > after {
		initial, after = true, 0
	}
	var evs []*Event
	for _, e := range s.log[min(after, len(s.log)):] {
		if e.Room == rm.id {
			evs = append(evs, e)
		}
	}
	if len(evs) == 0 && !initial {
		return nil
	}
	tl := map[string]any{"limited": false}
	if len(evs) > limit {
		evs = evs[len(evs)-limit:]
		tl["limited"] = true
		tl["prev_batch"] = fmt.Sprintf("s%d", evs[0].Pos-1)
	}
	wire := make([]map[string]any, 0, len(evs))
	for _, e := range evs {
		wire = append(wire, s.wireLocked(e, token, false))
	}
	tl["events"] = wire
	state := []map[string]any{}
	if initial {
		for _, e := range rm.state {
			state = append(state, s.wireLocked(e, token, false))
		}
	}
	joined := 0
	for _, m := range rm.members {
		if m == "join" {
			joined++
		}
	}
	return map[string]any{"timeline": tl, "state": map[string]any{"events": state},
		"summary": map[string]any{"m.joined_member_count": joined}}
}

// strippedLocked is the invite state a client sees before joining.
func (s *Server) strippedLocked(rm *room, token string) []map[string]any {
	out := []map[string]any{}
	for _, e := range rm.state {
		if e.Type == "m.room.member" || e.Type == "m.room.encryption" || e.Type == "m.room.name" {
			w := s.wireLocked(e, token, false)
			delete(w, "event_id")
			out = append(out, w)
		}
	}
	return out
}
