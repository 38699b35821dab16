package discordtest

import (
	"encoding/json"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

const apiPrefix = "/api/v9/"

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bot "+Token {
		writeError(w, http.StatusUnauthorized, 0, "401: Unauthorized")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, apiPrefix)
	if s.rateLimited(w, r.Method, path) {
		return
	}
	w, after, handle := s.faults(w, r, path)
	defer after()
	if !handle {
		return
	}
	seg := strings.Split(path, "/")
	switch {
	case path == "gateway" || path == "gateway/bot":
		writeJSON(w, http.StatusOK, map[string]any{"url": "ws" + strings.TrimPrefix(s.http.URL, "http") + "/ws/", "shards": 1})
	case path == "users/@me":
		writeJSON(w, http.StatusOK, s.botUser())
	case r.Method == http.MethodPut && len(seg) == 3 && seg[0] == "applications" && seg[2] == "commands":
		s.putCommands(w, r)
	case r.Method == http.MethodPost && len(seg) == 4 && seg[0] == "interactions" && seg[3] == "callback":
		s.interactionCallback(w, r, seg[1])
	case r.Method == http.MethodGet && len(seg) == 4 && seg[0] == "guilds" && seg[2] == "members":
		s.member(w, seg[3])
	case len(seg) >= 2 && seg[0] == "channels":
		s.serveChannel(w, r, seg[1], seg[2:])
	default:
		writeError(w, http.StatusNotFound, 0, "404: Not Found")
	}
}

// rateLimited answers an injected 429 for this request, if one is queued.
func (s *Server) rateLimited(w http.ResponseWriter, method, path string) bool {
	s.mu.Lock()
	if method == http.MethodPost {
		s.posts[path]++
	}
	key := method + " " + path
	queue := s.inject[key]
	if len(queue) == 0 {
		s.mu.Unlock()
		return false
	}
	if queue[0].skip > 0 {
		queue[0].skip--
		s.mu.Unlock()
		return false
	}
	after := queue[0].retryAfter
	s.inject[key] = queue[1:]
	s.mu.Unlock()
	writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"message": "You are being rate limited.", "retry_after": after, "global": false,
	})
	return true
}

func (s *Server) serveChannel(w http.ResponseWriter, r *http.Request, channelID string, rest []string) {
	s.mu.Lock()
	ch := s.channels[channelID]
	forbidden := s.forbidden[channelID]
	s.mu.Unlock()
	switch {
	case ch == nil:
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
	case forbidden:
		writeError(w, http.StatusForbidden, 50001, "Missing Access")
	case r.Method == http.MethodGet && len(rest) == 0:
		writeJSON(w, http.StatusOK, ch)
	case r.Method == http.MethodPatch && len(rest) == 0:
		s.modifyChannel(w, r, ch)
	case r.Method == http.MethodGet && len(rest) == 1 && rest[0] == "messages":
		s.historyRoute(w, r, channelID)
	case r.Method == http.MethodPost && len(rest) == 1 && rest[0] == "messages":
		s.createMessage(w, r, channelID)
	case r.Method == http.MethodPatch && len(rest) == 2 && rest[0] == "messages":
		s.editMessage(w, r, channelID, rest[1])
	case r.Method == http.MethodDelete && len(rest) == 2 && rest[0] == "messages":
		s.deleteMessage(w, channelID, rest[1])
	case r.Method == http.MethodPost && len(rest) == 1 && rest[0] == "typing":
		s.mu.Lock()
		s.typing[channelID]++
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && len(rest) == 3 && rest[0] == "messages" && rest[2] == "threads":
		s.startThread(w, r, ch, rest[1])
	case r.Method == http.MethodPost && len(rest) == 1 && rest[0] == "threads":
		s.startLooseThread(w, r, ch)
	default:
		writeError(w, http.StatusNotFound, 0, "404: Not Found")
	}
}

// historyRoute answers GET /channels/{id}/messages?after=&limit= like
// Discord: the oldest `limit` messages after the id, newest first.
func (s *Server) historyRoute(w http.ResponseWriter, r *http.Request, channelID string) {
	after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit <= 0 || limit > 100 {
		limit = 50
	}
	s.mu.Lock()
	var out []*discordgo.Message
	for _, m := range s.history[channelID] {
		if id, _ := strconv.ParseUint(m.ID, 10, 64); id > after && len(out) < limit {
			c := *m
			out = append(out, &c)
		}
	}
	s.mu.Unlock()
	slices.Reverse(out)
	writeJSON(w, http.StatusOK, nonNilMessages(out))
}

func nonNilMessages(m []*discordgo.Message) []*discordgo.Message {
	if m == nil {
		return []*discordgo.Message{}
	}
	return m
}

type messageBody struct {
	Nonce        string            `json:"nonce"`
	EnforceNonce bool              `json:"enforce_nonce"`
	Content      *string           `json:"content"`
	Components   []json.RawMessage `json:"components"`
	Flags        int               `json:"flags"`
	// AllowedMentions is who the message may notify.
	AllowedMentions *struct {
		Parse []string `json:"parse"`
		Users []string `json:"users"`
	} `json:"allowed_mentions"`
	Reference *struct {
		MessageID string `json:"message_id"`
	} `json:"message_reference"`
	files []Attachment // a multipart message's files[n] parts
}

// components checks the body's components as Discord does; a refused
// layout has been answered with Discord's 400.
func (b messageBody) components(w http.ResponseWriter) ([]Component, bool) {
	comps, err := parseComponents(b.Components)
	if err != nil {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: "+err.Error())
		return nil, false
	}
	return comps, true
}

func decodeMessage(w http.ResponseWriter, r *http.Request) (messageBody, bool) {
	var body messageBody
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		return decodeUpload(w, r)
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return body, false
	}
	if body.Content != nil && utf8.RuneCountInString(*body.Content) > 2000 {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: content: Must be 2000 or fewer in length.")
		return body, false
	}
	return body, true
}

func (s *Server) createMessage(w http.ResponseWriter, r *http.Request, channelID string) {
	body, ok := decodeMessage(w, r)
	if !ok {
		return
	}
	if (body.Content == nil || *body.Content == "") && len(body.Components) == 0 && len(body.files) == 0 {
		writeError(w, http.StatusBadRequest, 50006, "Cannot send an empty message")
		return
	}
	comps, ok := body.components(w)
	if !ok {
		return
	}
	s.mu.Lock()
	if body.Content != nil {
		s.creates[channelID] = append(s.creates[channelID], *body.Content)
	}
	nonceKey := channelID + "\x00" + body.Nonce
	if prev, ok := s.nonces[nonceKey]; ok && body.EnforceNonce && body.Nonce != "" {
		// As on Discord: the message already created with this nonce.
		c := *prev
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, &c)
		return
	}
	m := &discordgo.Message{ID: s.nextIDLocked(), ChannelID: channelID, Author: s.botUser(), Type: discordgo.MessageTypeDefault}
	if body.Nonce != "" {
		s.nonces[nonceKey] = m
	}
	if body.Content != nil {
		m.Content = *body.Content
	}
	sent := SentMessage{ID: m.ID, ChannelID: channelID, Content: m.Content, ButtonIDs: buttonIDs(comps), Files: body.files,
		Components: comps, ComponentsSent: body.Components != nil,
		Silent: body.Flags&int(discordgo.MessageFlagsSuppressNotifications) != 0}
	if am := body.AllowedMentions; am != nil {
		sent.MentionsParsed, sent.MentionsUsers = am.Parse, am.Users
	}
	if len(comps) > 0 {
		s.components[channelID+"/"+m.ID] = comps
	}
	for i, f := range body.files {
		m.Attachments = append(m.Attachments, &discordgo.MessageAttachment{ID: m.ID + "-" + strconv.Itoa(i),
			Filename: f.Name, ContentType: f.ContentType, Size: len(f.Data)})
	}
	if body.Reference != nil {
		sent.ReplyTo = body.Reference.MessageID
		m.MessageReference = &discordgo.MessageReference{MessageID: body.Reference.MessageID, ChannelID: channelID}
	}
	s.history[channelID] = append(s.history[channelID], m)
	s.sent[channelID] = append(s.sent[channelID], sent)
	s.notifyLocked()
	live := *m
	if ch := s.channels[channelID]; ch != nil {
		live.GuildID = ch.GuildID
	}
	s.mu.Unlock()
	s.dispatch(live.GuildID, "MESSAGE_CREATE", &live) // the bot sees its own messages, as on Discord
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) editMessage(w http.ResponseWriter, r *http.Request, channelID, messageID string) {
	body, ok := decodeMessage(w, r)
	if !ok {
		return
	}
	comps, ok := body.components(w)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.history[channelID] {
		if m.ID != messageID {
			continue
		}
		if m.Author == nil || m.Author.ID != BotID {
			writeError(w, http.StatusForbidden, 50005, "Cannot edit a message authored by another user")
			return
		}
		if body.Content != nil {
			m.Content = *body.Content
		}
		if body.Components != nil { // "components": [] removes them; no field keeps them
			s.components[channelID+"/"+m.ID] = comps
		}
		s.edits = append(s.edits, SentMessage{ID: m.ID, ChannelID: channelID, Content: m.Content, ButtonIDs: buttonIDs(comps),
			Components: comps, ComponentsSent: body.Components != nil})
		s.notifyLocked()
		writeJSON(w, http.StatusOK, m)
		return
	}
	writeError(w, http.StatusNotFound, 10008, "Unknown Message")
}

// deleteMessage removes a bot message from the channel's history, like
// Discord (204); Deleted lists it.
func (s *Server) deleteMessage(w http.ResponseWriter, channelID, messageID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.history[channelID] {
		if m.ID != messageID {
			continue
		}
		if m.Author == nil || m.Author.ID != BotID {
			writeError(w, http.StatusForbidden, 50003, "Cannot execute action on this channel type")
			return
		}
		s.history[channelID] = append(s.history[channelID][:i], s.history[channelID][i+1:]...)
		delete(s.components, channelID+"/"+m.ID)
		s.deleted = append(s.deleted, SentMessage{ID: m.ID, ChannelID: channelID, Content: m.Content})
		s.notifyLocked()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeError(w, http.StatusNotFound, 10008, "Unknown Message")
}

// startThread creates a public thread from a message; like Discord, the
// thread's id is the message's id.
func (s *Server) startThread(w http.ResponseWriter, r *http.Request, parent *discordgo.Channel, messageID string) {
	var body struct {
		Name string `json:"name"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	s.mu.Lock()
	msg := s.findLocked(parent.ID, messageID)
	_, exists := s.channels[messageID]
	if msg == nil || exists {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, 160004, "A thread has already been created for this message")
		return
	}
	th := &discordgo.Channel{ID: messageID, GuildID: parent.GuildID, ParentID: parent.ID, OwnerID: BotID,
		Type: discordgo.ChannelTypeGuildPublicThread, Name: body.Name}
	s.channels[th.ID] = th
	for _, m := range s.history[parent.ID] {
		if m.ID == messageID {
			m.Thread = th
		}
	}
	c := *th
	s.mu.Unlock()
	s.dispatch(c.GuildID, "THREAD_CREATE", map[string]any{
		"id": c.ID, "guild_id": c.GuildID, "parent_id": c.ParentID, "owner_id": c.OwnerID,
		"type": c.Type, "name": c.Name, "newly_created": true,
	})
	writeJSON(w, http.StatusCreated, &c)
}

func (s *Server) interactionCallback(w http.ResponseWriter, r *http.Request, interactionID string) {
	var body struct {
		Type int `json:"type"`
		Data *struct {
			Content string `json:"content"`
			Flags   int    `json:"flags"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, 50109, "invalid JSON")
		return
	}
	resp := InteractionResponse{InteractionID: interactionID, Type: body.Type}
	if body.Data != nil {
		resp.Content = body.Data.Content
		resp.Ephemeral = body.Data.Flags&int(discordgo.MessageFlagsEphemeral) != 0
	}
	s.mu.Lock()
	s.responses = append(s.responses, resp)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) putCommands(w http.ResponseWriter, r *http.Request) {
	var cmds []map[string]any
	if err := json.NewDecoder(r.Body).Decode(&cmds); err != nil {
		writeError(w, http.StatusBadRequest, 50109, "invalid JSON")
		return
	}
	// Discord's rules for options: lower-case names of 1-32 characters and
	// descriptions of 1-100.
	options := make(map[string][]string)
	for _, c := range cmds {
		name, _ := c["name"].(string)
		opts, _ := c["options"].([]any)
		for _, o := range opts {
			om, _ := o.(map[string]any)
			oname, _ := om["name"].(string)
			desc, _ := om["description"].(string)
			if oname == "" || len(oname) > 32 || strings.ToLower(oname) != oname || desc == "" || len([]rune(desc)) > 100 {
				writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
				return
			}
			options[name] = append(options[name], oname)
		}
	}
	s.mu.Lock()
	s.commands = s.commands[:0]
	s.commandOptions = options
	for i, c := range cmds {
		name, _ := c["name"].(string)
		s.commands = append(s.commands, name)
		c["id"] = strconv.Itoa(5000 + i)
		c["application_id"] = AppID
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, cmds)
}

// CommandOptions are the option names of a registered command.
func (s *Server) CommandOptions(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.commandOptions[name]...)
}

func (s *Server) member(w http.ResponseWriter, userID string) {
	s.mu.Lock()
	roles := nonNil(s.members[userID])
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"user": map[string]any{"id": userID, "username": "u" + userID}, "roles": roles})
}

func formatID(id uint64) string { return strconv.FormatUint(id, 10) }

// startLooseThread answers POST /channels/{id}/threads (a thread without a
// starter message) as Discord does for a text channel: a new public
// thread, THREAD_CREATE dispatched. Threads, DMs and other channel types
// cannot hold one.
func (s *Server) startLooseThread(w http.ResponseWriter, r *http.Request, parent *discordgo.Channel) {
	var body struct {
		Name string `json:"name"`
		Type int    `json:"type"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Name == "" || len([]rune(body.Name)) > 100 {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
		return
	}
	if parent.Type != discordgo.ChannelTypeGuildText {
		writeError(w, http.StatusBadRequest, 50024, "Cannot execute action on this channel type")
		return
	}
	s.mu.Lock()
	th := &discordgo.Channel{ID: s.nextIDLocked(), GuildID: parent.GuildID, ParentID: parent.ID, OwnerID: BotID,
		Type: discordgo.ChannelType(body.Type), Name: body.Name}
	s.channels[th.ID] = th
	s.threadsMade = append(s.threadsMade, *th)
	c := *th
	s.mu.Unlock()
	s.dispatch(c.GuildID, "THREAD_CREATE", map[string]any{
		"id": c.ID, "guild_id": c.GuildID, "parent_id": c.ParentID, "owner_id": c.OwnerID,
		"type": c.Type, "name": c.Name, "newly_created": true,
	})
	writeJSON(w, http.StatusCreated, &c)
}

// ThreadsMade are the threads the bot started without a starter message
// (POST /channels/{id}/threads), in order.
func (s *Server) ThreadsMade() []discordgo.Channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]discordgo.Channel(nil), s.threadsMade...)
}
