package matrixtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxEventBytes is the spec's limit on a whole event.
const maxEventBytes = 65536

func (s *Server) routes(mux *http.ServeMux) {
	const c = "/_matrix/client/v3/"
	mux.HandleFunc("GET /_matrix/client/versions", s.versions)
	mux.HandleFunc("GET "+c+"account/whoami", s.whoami)
	mux.HandleFunc("POST "+c+"user/{user}/filter", s.filter)
	mux.HandleFunc("GET "+c+"sync", s.sync)
	mux.HandleFunc("POST "+c+"join/{room}", s.join)
	mux.HandleFunc("POST "+c+"rooms/{room}/join", s.join)
	mux.HandleFunc("POST "+c+"rooms/{room}/leave", s.leave)
	mux.HandleFunc("PUT "+c+"rooms/{room}/send/{type}/{txn}", s.send)
	mux.HandleFunc("PUT "+c+"rooms/{room}/redact/{event}/{txn}", s.redact)
	mux.HandleFunc("PUT "+c+"rooms/{room}/typing/{user}", s.typingHandler)
	mux.HandleFunc("POST "+c+"rooms/{room}/receipt/{rtype}/{event}", s.receipt)
	mux.HandleFunc("GET "+c+"rooms/{room}/joined_members", s.joinedMembers)
	mux.HandleFunc("GET "+c+"rooms/{room}/state/{type}/{key...}", s.stateEvent)
	mux.HandleFunc("GET "+c+"rooms/{room}/event/{event}", s.getEvent)
	mux.HandleFunc("GET "+c+"rooms/{room}/messages", s.messages)
	mux.HandleFunc("POST /_matrix/media/v3/upload", s.upload)
	mux.HandleFunc("GET /_matrix/client/v1/media/config", s.mediaConfig)
	mux.HandleFunc("GET /_matrix/client/v1/media/download/{server}/{id}", s.download)
	mux.HandleFunc("GET /_matrix/media/v3/download/{server}/{id}", s.legacyDownload)
}

func (s *Server) versions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	legacy := s.legacy
	s.mu.Unlock()
	v := []string{"v1.1", "v1.5", "v1.10"}
	if !legacy {
		v = append(v, "v1.11")
	}
	writeJSON(w, 200, map[string]any{"versions": v, "unstable_features": map[string]bool{}})
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"user_id": callerOf(r).user, "device_id": "FAKEDEVICE"})
}

func (s *Server) filter(w http.ResponseWriter, r *http.Request) {
	var f struct {
		Room struct {
			Timeline struct {
				Limit int `json:"limit"`
			} `json:"timeline"`
		} `json:"room"`
	}
	if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
		writeError(w, 400, "M_BAD_JSON", err.Error())
		return
	}
	s.mu.Lock()
	id := strconv.Itoa(len(s.filters) + 1)
	s.filters[id] = f.Room.Timeline.Limit
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"filter_id": id})
}

func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	user := callerOf(r).user
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.rooms[room]
	if rm == nil {
		writeError(w, 404, "M_NOT_FOUND", "no such room")
		return
	}
	if m := rm.members[user]; m != "invite" && m != "join" {
		writeError(w, 403, "M_FORBIDDEN", "not invited")
		return
	}
	if rm.members[user] != "join" {
		s.memberLocked(room, user, user, "join")
	}
	writeJSON(w, 200, map[string]any{"room_id": room})
}

func (s *Server) leave(w http.ResponseWriter, r *http.Request) {
	user := callerOf(r).user
	s.mu.Lock()
	defer s.mu.Unlock()
	if rm := s.rooms[r.PathValue("room")]; rm != nil && rm.members[user] != "" {
		s.memberLocked(rm.id, user, user, "leave")
	}
	writeJSON(w, 200, map[string]any{})
}

func (s *Server) memberLocked(room, sender, user, membership string) *Event {
	key := user
	return s.appendLocked(&Event{Room: room, Sender: sender, Type: "m.room.member", StateKey: &key,
		Content: map[string]any{"membership": membership}})
}

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	var content map[string]any
	if err := json.NewDecoder(r.Body).Decode(&content); err != nil {
		writeError(w, 400, "M_NOT_JSON", err.Error())
		return
	}
	c := callerOf(r)
	room, txn := r.PathValue("room"), r.PathValue("txn")
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.txns[c.token+"|"+txn]; ok {
		// Like Synapse: a repeated transaction answers the first event, even
		// when the body differs, and stores nothing.
		s.txnReplays++
		writeJSON(w, 200, map[string]any{"event_id": id})
		return
	}
	rm := s.rooms[room]
	if rm == nil || rm.members[c.user] != "join" {
		writeError(w, 403, "M_FORBIDDEN", "not in room")
		return
	}
	e := &Event{Room: room, Sender: c.user, Type: r.PathValue("type"), Content: content, TxnID: txn, token: c.token}
	if b, _ := json.Marshal(e); len(b) > maxEventBytes {
		writeError(w, 413, "M_TOO_LARGE", fmt.Sprintf("event is %d bytes", len(b)))
		return
	}
	s.appendLocked(e)
	s.txns[c.token+"|"+txn] = e.ID
	writeJSON(w, 200, map[string]any{"event_id": e.ID})
}

func (s *Server) redact(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r)
	room, target, txn := r.PathValue("room"), r.PathValue("event"), r.PathValue("txn")
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.txns[c.token+"|"+txn]; ok {
		s.txnReplays++
		writeJSON(w, 200, map[string]any{"event_id": id})
		return
	}
	orig := s.byID[target]
	if orig == nil || orig.Room != room {
		writeError(w, 404, "M_NOT_FOUND", "no such event")
		return
	}
	orig.Content = map[string]any{}
	e := s.appendLocked(&Event{Room: room, Sender: c.user, Type: "m.room.redaction", Redacts: target,
		Content: map[string]any{"redacts": target}, TxnID: txn, token: c.token})
	s.txns[c.token+"|"+txn] = e.ID
	writeJSON(w, 200, map[string]any{"event_id": e.ID})
}

func (s *Server) typingHandler(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Typing bool `json:"typing"`
	}
	_ = json.NewDecoder(r.Body).Decode(&b)
	s.mu.Lock()
	s.typing = append(s.typing, Typing{Room: r.PathValue("room"), User: r.PathValue("user"), Typing: b.Typing})
	s.pokeLocked()
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{})
}

func (s *Server) receipt(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Thread string `json:"thread_id"`
	}
	_ = json.NewDecoder(r.Body).Decode(&b)
	s.mu.Lock()
	s.receipts = append(s.receipts, Receipt{Room: r.PathValue("room"), Event: r.PathValue("event"), Thread: b.Thread})
	s.pokeLocked()
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{})
}

func (s *Server) joinedMembers(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.rooms[r.PathValue("room")]
	if rm == nil {
		writeError(w, 404, "M_NOT_FOUND", "no such room")
		return
	}
	joined := map[string]any{}
	for u, m := range rm.members {
		if m == "join" {
			joined[u] = map[string]any{"display_name": strings.TrimPrefix(strings.SplitN(u, ":", 2)[0], "@")}
		}
	}
	writeJSON(w, 200, map[string]any{"joined": joined})
}

func (s *Server) stateEvent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rm := s.rooms[r.PathValue("room")]
	if rm == nil {
		writeError(w, 404, "M_NOT_FOUND", "no such room")
		return
	}
	e := rm.state[r.PathValue("type")+"|"+r.PathValue("key")]
	if e == nil {
		writeError(w, 404, "M_NOT_FOUND", "no such state")
		return
	}
	writeJSON(w, 200, e.Content)
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[r.PathValue("event")]
	if e == nil || e.Room != r.PathValue("room") {
		writeError(w, 404, "M_NOT_FOUND", "no such event")
		return
	}
	writeJSON(w, 200, s.wireLocked(e, callerOf(r).token, true))
}

// messages walks the room backwards from `from` (a sync token) down to
// `to`, newest first, as /messages with dir=b.
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, to := tokenPos(q.Get("from"), -1), tokenPos(q.Get("to"), 0)
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 {
		limit = 10
	}
	room := r.PathValue("room")
	s.mu.Lock()
	defer s.mu.Unlock()
	if from < 0 {
		from = len(s.log)
	}
	chunk := []map[string]any{}
	end := ""
	for p := from; p > to; p-- {
		e := s.log[p-1]
		if e.Room != room {
			continue
		}
		if len(chunk) == limit {
			end = fmt.Sprintf("s%d", p)
			break
		}
		chunk = append(chunk, s.wireLocked(e, callerOf(r).token, true))
	}
	if len(chunk) > 0 && s.takeNullsLocked() {
		chunk = append(chunk, nil)
	}
	resp := map[string]any{"start": q.Get("from"), "chunk": chunk}
	if end != "" {
		resp["end"] = end
	}
	writeJSON(w, 200, resp)
}

// wireLocked is e as a client sees it: unsigned.transaction_id only for
// the token that sent it, room_id only outside /sync.
func (s *Server) wireLocked(e *Event, token string, withRoom bool) map[string]any {
	m := map[string]any{"event_id": e.ID, "sender": e.Sender, "type": e.Type, "content": e.Content,
		"origin_server_ts": e.TS}
	if e.StateKey != nil {
		m["state_key"] = *e.StateKey
	}
	if e.Redacts != "" {
		m["redacts"] = e.Redacts
	}
	if withRoom {
		m["room_id"] = e.Room
	}
	if e.TxnID != "" && e.token == token {
		m["unsigned"] = map[string]any{"transaction_id": e.TxnID}
	}
	return m
}

func tokenPos(tok string, dflt int) int {
	n, err := strconv.Atoi(strings.TrimPrefix(tok, "s"))
	if err != nil || !strings.HasPrefix(tok, "s") {
		return dflt
	}
	return n
}

func readAll(r io.Reader) ([]byte, error) { return io.ReadAll(io.LimitReader(r, 256<<20)) }
