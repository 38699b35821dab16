package discordtest

import (
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Rename is a thread renamed through REST (PATCH /channels/{id}).
type Rename struct {
	ThreadID, Name string
}

// modifyChannel is PATCH /channels/{id} as Discord answers it for a
// thread's name: 1-100 characters, the channel returned, and
// THREAD_UPDATE dispatched to every client, the bot that renamed it too.
// A thread whose renames are denied answers 403 Missing Permissions.
func (s *Server) modifyChannel(w http.ResponseWriter, r *http.Request, ch *discordgo.Channel) {
	var body struct {
		Name *string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	s.mu.Lock()
	switch {
	case s.renameDenied[ch.ID]:
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, 50013, "Missing Permissions")
		return
	case body.Name == nil || !ch.IsThread():
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
		return
	case utf8.RuneCountInString(*body.Name) < 1 || utf8.RuneCountInString(*body.Name) > 100:
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body (name: Must be between 1 and 100 in length.)")
		return
	}
	// A new value, not an edit: a GET may be encoding the old one.
	c := *ch
	c.Name = *body.Name
	s.channels[c.ID] = &c
	s.renames = append(s.renames, Rename{ThreadID: c.ID, Name: c.Name})
	s.notifyLocked()
	s.mu.Unlock()
	s.dispatchThreadUpdate(c)
	writeJSON(w, http.StatusOK, &c)
}

// RenameThread renames thread id as a member does in Discord's client:
// THREAD_UPDATE with the new name is dispatched.
func (s *Server) RenameThread(id, name string) {
	s.mu.Lock()
	ch := s.channels[id]
	if ch == nil {
		s.mu.Unlock()
		return
	}
	c := *ch
	c.Name = name
	s.channels[id] = &c
	s.mu.Unlock()
	s.dispatchThreadUpdate(c)
}

// UpdateThread dispatches THREAD_UPDATE for thread id as it is (an
// archive, a lock: anything but a rename).
func (s *Server) UpdateThread(id string) {
	s.mu.Lock()
	ch := s.channels[id]
	if ch == nil {
		s.mu.Unlock()
		return
	}
	c := *ch
	s.mu.Unlock()
	s.dispatchThreadUpdate(c)
}

func (s *Server) dispatchThreadUpdate(c discordgo.Channel) {
	s.dispatch(c.GuildID, "THREAD_UPDATE", map[string]any{
		"id": c.ID, "guild_id": c.GuildID, "parent_id": c.ParentID, "owner_id": c.OwnerID,
		"type": c.Type, "name": c.Name,
	})
}

// DenyRename makes renames of thread id fail as for a bot without the
// right to manage it (403 Missing Permissions).
func (s *Server) DenyRename(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renameDenied[id] = true
}

// Renames are the renames the bot made, in order.
func (s *Server) Renames() []Rename {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Rename(nil), s.renames...)
}
