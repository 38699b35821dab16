package slacktest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Post is a message a user posts.
type Post struct {
	Channel     string
	ChannelType string // "channel" (default), "group", "mpim"; "im" by default for a D… channel
	User        string
	Text        string
	ThreadTS    string // a reply in this thread
	MentionBot  bool   // prefix the text with <@UBOT>
	Files       []File // from AddFile; the message is then a file_share
}

// Post stores p as a user's message and sends its events_api envelope;
// it returns the message's ts.
func (s *Server) Post(p Post) string {
	ts, _ := s.PostEvent(p)
	return ts
}

// PostEvent is Post returning the event id too (for Redeliver).
func (s *Server) PostEvent(p Post) (ts, eventID string) {
	if p.MentionBot {
		p.Text = strings.TrimSpace("<@" + BotUserID + "> " + p.Text)
	}
	if p.ChannelType == "" {
		p.ChannelType = "channel"
		if strings.HasPrefix(p.Channel, "D") {
			p.ChannelType = "im"
		}
	}
	s.mu.Lock()
	s.noteDMLocked(p.Channel, p.User)
	m := &Message{Channel: p.Channel, TS: s.nextTSLocked(), ThreadTS: p.ThreadTS, User: p.User, Text: p.Text,
		Files: p.Files}
	s.msgs[p.Channel] = append(s.msgs[p.Channel], m)
	ev := messageEvent(m, p.ChannelType)
	env := s.eventEnvelopeLocked(ev)
	s.mu.Unlock()
	s.send(env)
	return m.TS, env.eventID
}

func messageEvent(m *Message, channelType string) reply {
	ev := reply{"type": "message", "channel": m.Channel, "channel_type": channelType, "user": m.User,
		"text": m.Text, "ts": m.TS, "event_ts": m.TS}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
	}
	if m.BotID != "" {
		ev["bot_id"] = m.BotID
	}
	if len(m.Files) > 0 {
		ev["subtype"] = "file_share"
		ev["files"] = m.Files
	}
	return ev
}

// eventEnvelopeLocked wraps an inner event as Slack's event_callback.
func (s *Server) eventEnvelopeLocked(inner reply) *envelope {
	eventID := s.nextIDLocked("Ev")
	payload, _ := json.Marshal(reply{"token": "v", "team_id": TeamID, "api_app_id": AppID,
		"type": "event_callback", "event_id": eventID, "event_time": time.Now().Unix(), "event": inner})
	return &envelope{id: s.nextEnvelopeLocked(), kind: "events_api", eventID: eventID, payload: payload}
}

// echoLocked sends the bot's own post or edit back as an event.
func (s *Server) echoLocked(m *Message, edited bool) {
	ev := messageEvent(m, channelType(m.Channel))
	if edited {
		ev = reply{"type": "message", "subtype": "message_changed", "channel": m.Channel, "hidden": true,
			"channel_type": channelType(m.Channel), "ts": s.nextTSLocked(), "message": messageJSON(m, false),
			"previous_message": messageJSON(m, false)}
	}
	env := s.eventEnvelopeLocked(ev)
	go s.send(env) // s.mu is held by the caller
}

func channelType(ch string) string {
	if strings.HasPrefix(ch, "D") {
		return "im"
	}
	return "channel"
}

// EditPost changes a user's message and sends message_changed.
func (s *Server) EditPost(channel, ts, text string) error {
	s.mu.Lock()
	m := s.findLocked(channel, ts)
	if m == nil {
		s.mu.Unlock()
		return fmt.Errorf("slacktest: no message %s in %s", ts, channel)
	}
	prev := messageJSON(m, false)
	m.Text, m.Edits = text, m.Edits+1
	now := s.nextTSLocked()
	cur := messageJSON(m, false)
	cur["edited"] = reply{"user": m.User, "ts": now}
	ev := reply{"type": "message", "subtype": "message_changed", "hidden": true, "channel": channel,
		"channel_type": channelType(channel), "ts": now, "event_ts": now, "message": cur, "previous_message": prev}
	env := s.eventEnvelopeLocked(ev)
	s.mu.Unlock()
	s.send(env)
	return nil
}

// PressButton presses the button carrying value on the bot's message
// channel/msgTS, as user: a block_actions interactive envelope. A value
// the message does not offer is an error.
func (s *Server) PressButton(channel, msgTS, value, user string) (triggerID string, err error) {
	m, ok := s.Message(channel, msgTS)
	if !ok {
		return "", fmt.Errorf("slacktest: no message %s in %s", msgTS, channel)
	}
	b, err := findAction(m, value)
	if err != nil {
		return "", err
	}
	action := reply{"action_id": b.ActionID, "block_id": b.BlockID, "action_ts": msgTS}
	if b.Select {
		action["type"] = "static_select"
		action["selected_option"] = reply{"text": reply{"type": "plain_text", "text": b.Label}, "value": value}
	} else {
		action["type"] = "button"
		action["value"] = value
		action["text"] = reply{"type": "plain_text", "text": b.Label}
	}
	s.mu.Lock()
	triggerID = s.nextIDLocked("tr")
	payload, _ := json.Marshal(reply{"type": "block_actions", "trigger_id": triggerID, "api_app_id": AppID,
		"user":      reply{"id": user, "username": user, "name": user, "team_id": TeamID},
		"channel":   reply{"id": channel},
		"team":      reply{"id": TeamID},
		"container": reply{"type": "message", "message_ts": msgTS, "channel_id": channel, "thread_ts": m.ThreadTS},
		"message":   messageJSON(&m, false),
		"actions":   []any{action}})
	env := &envelope{id: s.nextEnvelopeLocked(), kind: "interactive", payload: payload}
	s.mu.Unlock()
	s.send(env)
	return triggerID, nil
}

// SlashCommand runs command (e.g. "/codex") with text in channel as user;
// the user sees the ack's payload (Acks) or what is posted to the
// command's response_url (Responses, by trigger id).
func (s *Server) SlashCommand(channel, user, command, text string) (envelopeID, triggerID string) {
	s.mu.Lock()
	s.noteDMLocked(channel, user)
	triggerID = s.nextIDLocked("tr")
	payload, _ := json.Marshal(reply{"token": "v", "team_id": TeamID, "channel_id": channel,
		"channel_name": strings.ToLower(channel), "user_id": user, "user_name": user, "command": command,
		"text": text, "response_url": s.srv.URL + "/response/" + triggerID, "trigger_id": triggerID, "api_app_id": AppID})
	env := &envelope{id: s.nextEnvelopeLocked(), kind: "slash_commands", payload: payload}
	s.mu.Unlock()
	s.send(env)
	return env.id, triggerID
}
