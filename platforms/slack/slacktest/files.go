package slacktest

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// File is a file as Slack describes it in a message and in files.info.
type File struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Title              string `json:"title,omitempty"`
	Mimetype           string `json:"mimetype"`
	Filetype           string `json:"filetype,omitempty"`
	Size               int    `json:"size"`
	URLPrivate         string `json:"url_private"`
	URLPrivateDownload string `json:"url_private_download"`
}

type storedFile struct {
	File
	data []byte
}

// Upload is one file the bot uploaded through the external flow.
type Upload struct {
	FileID, Name, Title string
	Data                []byte
	Channel, ThreadTS   string // where completeUploadExternal shared it
	Comment             string // initial_comment
	Completed           bool
}

// AddFile makes the fake serve data as a file (behind the bot token) and
// returns its description, to attach to a Post.
func (s *Server) AddFile(name, mime string, data []byte) File {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextIDLocked("F")
	f := File{ID: id, Name: name, Title: name, Mimetype: mime, Size: len(data),
		URLPrivate:         s.srv.URL + "/files/" + id + "/" + name,
		URLPrivateDownload: s.srv.URL + "/files/" + id + "/download/" + name}
	s.files[id] = &storedFile{File: f, data: data}
	return f
}

// Uploads is every upload the bot started, in order.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Upload(nil), s.uploads...)
}

// Downloads is how many file downloads the fake served.
func (s *Server) Downloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads
}

func (s *Server) uploadURL(r *http.Request) reply {
	name := r.Form.Get("filename")
	n, err := strconv.Atoi(r.Form.Get("length"))
	if name == "" || err != nil || n <= 0 {
		return fail("invalid_arguments")
	}
	id := s.nextIDLocked("F")
	s.uploads = append(s.uploads, Upload{FileID: id, Name: name})
	return reply{"upload_url": s.srv.URL + "/upload/" + id, "file_id": id}
}

// handleUpload takes the bytes of an external upload: a multipart body
// whose part "file" is the file, with the bot token as Bearer.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	w, after, ok := s.apply(w, r, "upload")
	if !ok {
		return
	}
	defer after()
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
		http.Error(w, "unauthorised", http.StatusUnauthorized)
		return
	}
	file, _, err := r.FormFile("file")
	if err != nil {
		http.Error(w, "no file part", http.StatusBadRequest)
		return
	}
	data, err := io.ReadAll(file)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	id := strings.TrimPrefix(r.URL.Path, "/upload/")
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.uploads {
		if s.uploads[i].FileID == id {
			s.uploads[i].Data = data
			s.notifyLocked()
			_, _ = io.WriteString(w, "OK - "+strconv.Itoa(len(data)))
			return
		}
	}
	http.Error(w, "unknown upload", http.StatusNotFound)
}

func (s *Server) completeUpload(r *http.Request) reply {
	var files []struct{ ID, Title string }
	if err := json.Unmarshal([]byte(r.Form.Get("files")), &files); err != nil || len(files) == 0 {
		return fail("invalid_arguments")
	}
	ch, thread := r.Form.Get("channel_id"), r.Form.Get("thread_ts")
	var out []any
	for _, f := range files {
		u := s.uploadLocked(f.ID)
		if u == nil || u.Data == nil {
			return fail("file_not_found")
		}
		u.Title, u.Channel, u.ThreadTS, u.Comment, u.Completed = f.Title, ch, thread, r.Form.Get("initial_comment"), true
		if ch != "" {
			s.shareLocked(u)
		}
		out = append(out, reply{"id": f.ID, "title": f.Title})
	}
	return reply{"files": out}
}

func (s *Server) uploadLocked(id string) *Upload {
	for i := range s.uploads {
		if s.uploads[i].FileID == id {
			return &s.uploads[i]
		}
	}
	return nil
}

// shareLocked posts the uploaded file as the bot's message, as Slack does.
func (s *Server) shareLocked(u *Upload) {
	f := File{ID: u.FileID, Name: u.Name, Title: u.Title, Size: len(u.Data)}
	m := &Message{Channel: u.Channel, TS: s.nextTSLocked(), ThreadTS: u.ThreadTS, User: BotUserID, BotID: BotID,
		Text: u.Comment, Files: []File{f}}
	s.msgs[u.Channel] = append(s.msgs[u.Channel], m)
}

func (s *Server) fileInfo(r *http.Request) reply {
	f, ok := s.files[r.Form.Get("file")]
	if !ok {
		return fail("file_not_found")
	}
	return reply{"file": f.File}
}

// handleDownload serves a file added with AddFile, to the bot token only.
func (s *Server) handleDownload(w http.ResponseWriter, r *http.Request) {
	w, after, ok := s.apply(w, r, "download")
	if !ok {
		return
	}
	defer after()
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
		// Slack answers a missing token with its sign-in page.
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html>sign in</html>")
		return
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/files/"), "/")
	s.mu.Lock()
	f, found := s.files[id]
	if found {
		s.downloads++
		s.notifyLocked()
	}
	s.mu.Unlock()
	if !found {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.Mimetype)
	_, _ = w.Write(f.data)
}
