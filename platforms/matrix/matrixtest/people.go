package matrixtest

import (
	"context"
	"fmt"
)

// RoomOptions describe a room a test creates.
type RoomOptions struct {
	Creator   string   // joined first
	Members   []string // joined too
	Invite    []string // invited by Creator (e.g. the bot)
	Name      string
	Encrypted bool
}

// CreateRoom makes a room and returns its id.
func (s *Server) CreateRoom(o RoomOptions) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("!r%d:fake.test", len(s.rooms)+1)
	s.rooms[id] = &room{id: id, members: map[string]string{}, state: map[string]*Event{}}
	s.memberLocked(id, o.Creator, o.Creator, "join")
	empty := ""
	if o.Name != "" {
		s.appendLocked(&Event{Room: id, Sender: o.Creator, Type: "m.room.name", StateKey: &empty,
			Content: map[string]any{"name": o.Name}})
	}
	if o.Encrypted {
		s.appendLocked(&Event{Room: id, Sender: o.Creator, Type: "m.room.encryption", StateKey: &empty,
			Content: map[string]any{"algorithm": "m.megolm.v1.aes-sha2"}})
	}
	for _, m := range o.Members {
		s.memberLocked(id, m, m, "join")
	}
	for _, u := range o.Invite {
		s.memberLocked(id, o.Creator, u, "invite")
	}
	return id
}

// Invite has from invite user into room.
func (s *Server) Invite(room, from, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memberLocked(room, from, user, "invite")
}

// Join makes user a member of room at once.
func (s *Server) Join(room, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memberLocked(room, user, user, "join")
}

// Membership is user's membership of room ("join", "invite", "leave", "").
func (s *Server) Membership(room, user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rm := s.rooms[room]; rm != nil {
		return rm.members[user]
	}
	return ""
}

// PostEvent appends an event from sender with any content; it returns the id.
func (s *Server) PostEvent(room, sender, typ string, content map[string]any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appendLocked(&Event{Room: room, Sender: sender, Type: typ, Content: content}).ID
}

// Post sends a text message.
func (s *Server) Post(room, sender, body string) string {
	return s.PostEvent(room, sender, "m.room.message", map[string]any{"msgtype": "m.text", "body": body})
}

// PostMentioning sends a text message whose m.mentions names users.
func (s *Server) PostMentioning(room, sender, body string, users ...string) string {
	return s.PostEvent(room, sender, "m.room.message", map[string]any{"msgtype": "m.text", "body": body,
		"m.mentions": map[string]any{"user_ids": users}})
}

// PostInThread sends a text message into the thread rooted at root.
func (s *Server) PostInThread(room, sender, root, body string) string {
	return s.PostEvent(room, sender, "m.room.message", map[string]any{"msgtype": "m.text", "body": body,
		"m.relates_to": map[string]any{"rel_type": "m.thread", "event_id": root, "is_falling_back": true,
			"m.in_reply_to": map[string]any{"event_id": root}}})
}

// Edit replaces the text of orig (m.replace).
func (s *Server) Edit(room, sender, orig, body string) string {
	return s.PostEvent(room, sender, "m.room.message", map[string]any{"msgtype": "m.text", "body": "* " + body,
		"m.new_content": map[string]any{"msgtype": "m.text", "body": body},
		"m.relates_to":  map[string]any{"rel_type": "m.replace", "event_id": orig}})
}

// React annotates target with key.
func (s *Server) React(room, sender, target, key string) string {
	return s.PostEvent(room, sender, "m.reaction", map[string]any{
		"m.relates_to": map[string]any{"rel_type": "m.annotation", "event_id": target, "key": key}})
}

// PostFile sends an m.file/m.image/m.audio message of an uploaded file.
func (s *Server) PostFile(room, sender, msgtype, name, mime string, data []byte) string {
	mxc := s.Upload(data, mime, name)
	return s.PostEvent(room, sender, "m.room.message", map[string]any{"msgtype": msgtype, "body": name,
		"filename": name, "url": mxc, "info": map[string]any{"mimetype": mime, "size": len(data)}})
}

// Events returns the events of room in log order (copies).
func (s *Server) Events(room string) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Event
	for _, e := range s.log {
		if e.Room == room {
			out = append(out, *e)
		}
	}
	return out
}

// Sent returns the events sender posted in room of the given type ("" any).
func (s *Server) Sent(room, sender, typ string) []Event {
	var out []Event
	for _, e := range s.Events(room) {
		if e.Sender == sender && (typ == "" || e.Type == typ) {
			out = append(out, e)
		}
	}
	return out
}

// Event returns one event by id.
func (s *Server) Event(id string) (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byID[id]; e != nil {
		return *e, true
	}
	return Event{}, false
}

// TypingSeen returns the typing notifications received.
func (s *Server) TypingSeen() []Typing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Typing(nil), s.typing...)
}

// ReceiptsSeen returns the read receipts received.
func (s *Server) ReceiptsSeen() []Receipt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Receipt(nil), s.receipts...)
}

// Position is the log's length: the sync token "s<Position>" is "now".
func (s *Server) Position() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

// WaitFor blocks until cond (called under no lock, on the copies it reads)
// holds or ctx ends; it is woken by every new event.
func (s *Server) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		wake := s.wake
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
