package telegramtest

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-telegram/bot/models"
)

// Draft is one message draft the bot streamed (sendMessageDraft, Bot API
// 9.5): a partial message shown in a private chat while it is generated,
// never a message of the chat.
type Draft struct {
	ChatID   int64
	ThreadID int
	DraftID  int64
	Text     string // visible text of its last version ("" shows "Thinking…")
	// Versions are the visible texts it was streamed with, in order.
	Versions []string
	// Ended: the bot then sent a message to the chat, which the client
	// shows in the draft's place; the draft is gone.
	Ended bool
}

// RefuseDrafts makes sendMessageDraft answer 404 "Not Found", as a Bot API
// server that predates the method does.
func (s *Server) RefuseDrafts(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseDrafts = on
}

// Drafts returns copies of the drafts the bot streamed to chat, in the
// order they started.
func (s *Server) Drafts(chat int64) []Draft {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Draft
	for _, d := range s.drafts {
		if d.ChatID == chat {
			c := *d
			c.Versions = slices.Clone(d.Versions)
			out = append(out, c)
		}
	}
	return out
}

// sendMessageDraft streams a draft as Telegram documents it: chat_id names
// a private chat, draft_id is a non-zero integer (the same id animates the
// change), text has at most 4096 units after entity parsing and may be
// empty (a "Thinking…" placeholder); message_thread_id follows the usual
// thread rules.
func (s *Server) sendMessageDraft(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	s.mu.Lock()
	refused := s.refuseDrafts
	s.mu.Unlock()
	if refused {
		writeFail(w, Failure{Code: 404, Description: "Not Found"})
		return
	}
	chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	thread, _ := strconv.Atoi(p["message_thread_id"])
	id, err := strconv.ParseInt(p["draft_id"], 10, 64)
	if err != nil || id == 0 {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: invalid draft_id specified"})
		return
	}
	visible := ""
	if strings.TrimSpace(p["text"]) != "" {
		v, f := s.visibleText(p["text"], p["parse_mode"])
		if f != nil {
			writeFail(w, *f)
			return
		}
		visible = v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.sendTargetLocked(w, chat, thread)
	if !ok {
		return
	}
	if c.Type != models.ChatTypePrivate {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: TEXTDRAFT_PEER_INVALID"})
		return
	}
	d := s.openDraftLocked(chat, thread, id)
	d.Text = visible
	d.Versions = append(d.Versions, visible)
	s.notifyLocked()
	writeOK(w, true)
}

// openDraftLocked is the draft still shown under id, or a new one.
func (s *Server) openDraftLocked(chat int64, thread int, id int64) *Draft {
	for _, d := range s.drafts {
		if d.ChatID == chat && d.ThreadID == thread && d.DraftID == id && !d.Ended {
			return d
		}
	}
	d := &Draft{ChatID: chat, ThreadID: thread, DraftID: id}
	s.drafts = append(s.drafts, d)
	return d
}

// endDraftsLocked ends the drafts shown in chat's thread: a message the
// bot sent there takes their place.
func (s *Server) endDraftsLocked(chat int64, thread int) {
	for _, d := range s.drafts {
		if d.ChatID == chat && d.ThreadID == thread {
			d.Ended = true
		}
	}
}
