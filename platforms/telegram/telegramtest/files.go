package telegramtest

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/go-telegram/bot/models"
)

// fakeFile is a file the server holds for getFile and downloads.
type fakeFile struct {
	id, path string
	data     []byte
	broken   bool // the download answers 500
}

// AddFile stores data as a file with a file_path ending in name and
// returns its file_id, for photo, document, voice … fields of a message.
func (s *Server) AddFile(name string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string]*fakeFile{}
	}
	id := fmt.Sprintf("file-%d", len(s.files)+1)
	s.files[id] = &fakeFile{id: id, path: "documents/" + id + "-" + name, data: data}
	return id
}

// BreakFile makes the download of file id fail with HTTP 500 (getFile
// still answers).
func (s *Server) BreakFile(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.files[id]; f != nil {
		f.broken = true
	}
}

// Downloads returns the file paths downloaded so far, in order.
func (s *Server) Downloads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.downloads...)
}

func (s *Server) getFile(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	s.mu.Lock()
	f := s.files[p["file_id"]]
	s.mu.Unlock()
	if f == nil {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: invalid file_id"})
		return
	}
	writeOK(w, models.File{FileID: f.id, FileUniqueID: "u" + f.id, FileSize: int64(len(f.data)), FilePath: f.path})
}

// serveFile answers GET /file/bot<token>/<file_path>.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/file/bot")
	token, path, ok := strings.Cut(rest, "/")
	if !ok || token != Token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	var found *fakeFile
	for _, f := range s.files {
		if f.path == path {
			found = f
		}
	}
	if found != nil {
		s.downloads = append(s.downloads, path)
		s.notifyLocked()
	}
	s.mu.Unlock()
	switch {
	case found == nil:
		http.Error(w, "Not Found", http.StatusNotFound)
	case found.broken:
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
	default:
		w.Write(found.data)
	}
}
