package slacktest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// reply is a Web API answer: ok plus the method's fields.
type reply map[string]any

func (s *Server) handleAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	w, after, ok := s.apply(w, r, method)
	if !ok {
		return
	}
	defer after()
	if method == "apps.connections.open" {
		s.handleConnectionsOpen(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, reply{"ok": false, "error": "invalid_form_data"})
		return
	}
	if tokenOf(r) != BotToken {
		writeJSON(w, reply{"ok": false, "error": "invalid_auth"})
		return
	}
	h, found := s.webMethods()[method]
	if !found {
		writeJSON(w, reply{"ok": false, "error": "unknown_method"})
		return
	}
	s.mu.Lock()
	s.calls[method]++
	out := h(r)
	s.notifyLocked()
	s.mu.Unlock()
	if _, set := out["ok"]; !set {
		out["ok"] = true
	}
	writeJSON(w, out)
}

// tokenOf is the request's token: the form field slack-go sends, or a
// Bearer header.
func tokenOf(r *http.Request) string {
	if t := r.Form.Get("token"); t != "" {
		return t
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func fail(code string) reply { return reply{"ok": false, "error": code} }

// webMethods are the handlers; each runs with s.mu held.
func (s *Server) webMethods() map[string]func(*http.Request) reply {
	return map[string]func(*http.Request) reply{
		"auth.test":                    s.authTest,
		"chat.postMessage":             s.postMessage,
		"chat.update":                  s.updateMessage,
		"chat.delete":                  s.deleteMessage,
		"chat.postEphemeral":           s.postEphemeral,
		"conversations.replies":        s.replies,
		"conversations.history":        s.history,
		"conversations.info":           s.conversationInfo,
		"users.info":                   s.userInfo,
		"assistant.threads.setStatus":  s.setStatus,
		"files.getUploadURLExternal":   s.uploadURL,
		"files.completeUploadExternal": s.completeUpload,
		"files.info":                   s.fileInfo,
	}
}

func (s *Server) authTest(*http.Request) reply {
	return reply{"url": "https://fake.slack.com/", "team": "Fake", "user": "codex", "team_id": TeamID,
		"user_id": BotUserID, "bot_id": BotID}
}

func (s *Server) postMessage(r *http.Request) reply {
	ch, text, blocks := r.Form.Get("channel"), r.Form.Get("text"), r.Form.Get("blocks")
	if code := checkPost(ch, text, blocks, 40000); code != "" {
		return fail(code)
	}
	if s.peerDMs[ch] {
		return fail("channel_not_found")
	}
	thread := r.Form.Get("thread_ts")
	if thread != "" && s.findLocked(ch, thread) == nil {
		return fail("thread_not_found")
	}
	m := &Message{Channel: ch, TS: s.nextTSLocked(), ThreadTS: thread, User: BotUserID, BotID: BotID,
		Text: text, Blocks: rawOrNil(blocks), Metadata: rawOrNil(r.Form.Get("metadata"))}
	s.msgs[ch] = append(s.msgs[ch], m)
	if s.echo {
		s.echoLocked(m, false)
	}
	return reply{"channel": ch, "ts": m.TS, "message": messageJSON(m, true)}
}

// checkPost is Slack's refusal of a message, or "".
func checkPost(channel, text, blocks string, maxText int) string {
	switch {
	case channel == "":
		return "channel_not_found"
	case text == "" && blocks == "":
		return "no_text"
	case len(text) > maxText:
		return "msg_too_long"
	}
	return checkBlocks(blocks)
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func (s *Server) updateMessage(r *http.Request) reply {
	ch, ts, text, blocks := r.Form.Get("channel"), r.Form.Get("ts"), r.Form.Get("text"), r.Form.Get("blocks")
	// chat.update is stricter than postMessage about text (about 4,000
	// bytes): the adapter keeps its fallback text short.
	if code := checkPost(ch, text, blocks, 4000); code != "" {
		return fail(code)
	}
	m := s.findLocked(ch, ts)
	if m == nil {
		return fail("message_not_found")
	}
	if m.BotID != BotID {
		return fail("cant_update_message")
	}
	m.Text, m.Edits = text, m.Edits+1
	if blocks != "" {
		m.Blocks = json.RawMessage(blocks)
	}
	s.updates = append(s.updates, Update{Channel: ch, TS: ts, Text: text, Blocks: rawOrNil(blocks)})
	if s.echo {
		s.echoLocked(m, true)
	}
	return reply{"channel": ch, "ts": ts, "text": text}
}

func (s *Server) deleteMessage(r *http.Request) reply {
	ch, ts := r.Form.Get("channel"), r.Form.Get("ts")
	for i, m := range s.msgs[ch] {
		if m.TS == ts {
			s.msgs[ch] = append(s.msgs[ch][:i:i], s.msgs[ch][i+1:]...)
			s.deleted = append(s.deleted, ch+":"+ts)
			return reply{"channel": ch, "ts": ts}
		}
	}
	return fail("message_not_found")
}

func (s *Server) postEphemeral(r *http.Request) reply {
	e := Ephemeral{Channel: r.Form.Get("channel"), User: r.Form.Get("user"), Text: r.Form.Get("text"),
		ThreadTS: r.Form.Get("thread_ts")}
	if e.Channel == "" || e.User == "" {
		return fail("channel_not_found")
	}
	s.ephems = append(s.ephems, e)
	return reply{"message_ts": s.nextTSLocked()}
}

// replies answers conversations.replies as Slack does: the root first,
// then the replies after oldest, a page of limit at a time.
func (s *Server) replies(r *http.Request) reply {
	ch, root := r.Form.Get("channel"), r.Form.Get("ts")
	rootMsg := s.findLocked(ch, root)
	if rootMsg == nil {
		return fail("thread_not_found")
	}
	oldest, meta := r.Form.Get("oldest"), r.Form.Get("include_all_metadata") == "1"
	var list []*Message
	for _, m := range s.msgs[ch] {
		if m.ThreadTS == root && m.TS != root && (oldest == "" || tsAfter(m.TS, oldest)) {
			list = append(list, m)
		}
	}
	page, next := paginate(list, r.Form.Get("cursor"), r.Form.Get("limit"))
	out := []any{messageJSON(rootMsg, meta)}
	for _, m := range page {
		out = append(out, messageJSON(m, meta))
	}
	return reply{"messages": out, "has_more": next != "", "response_metadata": reply{"next_cursor": next}}
}

// history answers conversations.history: top-level messages after
// oldest, newest first.
func (s *Server) history(r *http.Request) reply {
	ch, oldest := r.Form.Get("channel"), r.Form.Get("oldest")
	meta := r.Form.Get("include_all_metadata") == "1"
	var list []*Message
	all := s.msgs[ch]
	for i := len(all) - 1; i >= 0; i-- {
		m := all[i]
		if (m.ThreadTS == "" || m.ThreadTS == m.TS) && (oldest == "" || tsAfter(m.TS, oldest)) {
			list = append(list, m)
		}
	}
	page, next := paginate(list, r.Form.Get("cursor"), r.Form.Get("limit"))
	out := []any{}
	for _, m := range page {
		out = append(out, messageJSON(m, meta))
	}
	return reply{"messages": out, "has_more": next != "", "response_metadata": reply{"next_cursor": next}}
}

// paginate cuts list at the cursor (an offset, opaque to clients).
func paginate(list []*Message, cursor, limit string) ([]*Message, string) {
	from, _ := strconv.Atoi(cursor)
	n, _ := strconv.Atoi(limit)
	if n <= 0 || n > 1000 {
		n = 100
	}
	if from > len(list) {
		from = len(list)
	}
	end := min(from+n, len(list))
	next := ""
	if end < len(list) {
		next = strconv.Itoa(end)
	}
	return list[from:end], next
}

// tsAfter: Slack's ts strings have a fixed width, so they compare as
// numbers when parsed.
func tsAfter(a, b string) bool {
	fa, _ := strconv.ParseFloat(a, 64)
	fb, _ := strconv.ParseFloat(b, 64)
	if fa != fb {
		return fa > fb
	}
	return a > b
}

func messageJSON(m *Message, withMeta bool) reply {
	out := reply{"type": "message", "ts": m.TS, "text": m.Text}
	if m.User != "" {
		out["user"] = m.User
	}
	if m.BotID != "" {
		out["bot_id"] = m.BotID
	}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
	}
	if len(m.Blocks) > 0 {
		out["blocks"] = m.Blocks
	}
	if withMeta && len(m.Metadata) > 0 {
		out["metadata"] = m.Metadata
	}
	if len(m.Files) > 0 {
		out["files"] = m.Files
		out["subtype"] = "file_share"
	}
	return out
}

func (s *Server) conversationInfo(r *http.Request) reply {
	ch := r.Form.Get("channel")
	if s.peerDMs[ch] {
		return fail("channel_not_found")
	}
	info := reply{"id": ch, "name": strings.ToLower(ch), "is_channel": !strings.HasPrefix(ch, "D"),
		"is_im": strings.HasPrefix(ch, "D"), "is_member": true}
	if u := s.dmUsers[ch]; u != "" {
		info["user"] = u
	}
	return reply{"channel": info}
}

func (s *Server) userInfo(r *http.Request) reply {
	u, ok := s.users[r.Form.Get("user")]
	if !ok {
		return fail("user_not_found")
	}
	return reply{"user": reply{"id": u.ID, "name": u.Name, "real_name": u.RealName,
		"profile": reply{"display_name": u.DisplayName, "real_name": u.RealName}}}
}

func (s *Server) setStatus(r *http.Request) reply {
	st := Status{Channel: r.Form.Get("channel_id"), ThreadTS: r.Form.Get("thread_ts"), Status: r.Form.Get("status")}
	if st.Channel == "" || st.ThreadTS == "" {
		return fail("invalid_arguments")
	}
	s.stats = append(s.stats, st)
	return reply{}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}
