package telegramtest

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-telegram/bot/models"
)

// Upload is one sendPhoto or sendDocument the bot made.
type Upload struct {
	Method   string // "sendPhoto" or "sendDocument"
	ChatID   int64
	ThreadID int
	ID       int // message id in the chat
	FileName string
	Data     []byte
	Caption  string
	ReplyTo  int
}

// Uploads returns the files the bot sent, in order.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Upload(nil), s.uploads...)
}

func (s *Server) sendPhoto(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.upload(w, r, p, "sendPhoto", "photo")
}

func (s *Server) sendDocument(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.upload(w, r, p, "sendDocument", "document")
}

// upload records a multipart file upload; the caption is held to 1024
// UTF-16 units as Telegram does.
func (s *Server) upload(w http.ResponseWriter, r *http.Request, p map[string]string, method, field string) {
	chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	thread, _ := strconv.Atoi(p["message_thread_id"])
	if r.MultipartForm == nil || len(r.MultipartForm.File[field]) == 0 {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: there is no " + field + " in the request"})
		return
	}
	fh := r.MultipartForm.File[field][0]
	f, err := fh.Open()
	if err != nil {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: " + err.Error()})
		return
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: " + err.Error()})
		return
	}
	if utf16Len(p["caption"]) > 1024 {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: message caption is too long"})
		return
	}
	replyTo := replyToID(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.sendTargetLocked(w, chat, thread)
	if !ok {
		return
	}
	s.nextMsg[chat]++
	u := Upload{Method: method, ChatID: chat, ThreadID: thread, ID: s.nextMsg[chat], FileName: fh.Filename,
		Data: data, Caption: p["caption"], ReplyTo: replyTo}
	s.uploads = append(s.uploads, u)
	s.notifyLocked()
	writeOK(w, models.Message{ID: u.ID, From: &Bot, Chat: c, Date: int(time.Now().Unix()), Caption: u.Caption,
		MessageThreadID: thread, IsTopicMessage: thread != 0})
}
