package matrixtest

import (
	"fmt"
	"net/http"
)

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	data, err := readAll(r.Body)
	if err != nil {
		writeError(w, 400, "M_UNKNOWN", err.Error())
		return
	}
	s.mu.Lock()
	s.nextID++
	id := fmt.Sprintf("m%d", s.nextID)
	s.media[id] = Media{Data: data, Type: r.Header.Get("Content-Type"), Name: r.URL.Query().Get("filename")}
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"content_uri": "mxc://fake.test/" + id})
}

func (s *Server) mediaConfig(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"m.upload.size": 50 << 20})
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	legacy := s.legacy
	s.mu.Unlock()
	if legacy {
		writeError(w, 404, "M_UNRECOGNIZED", "unrecognized request")
		return
	}
	s.serveMedia(w, r)
}

func (s *Server) legacyDownload(w http.ResponseWriter, r *http.Request) { s.serveMedia(w, r) }

func (s *Server) serveMedia(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	m, ok := s.media[r.PathValue("id")]
	s.mu.Unlock()
	if !ok || r.PathValue("server") != "fake.test" {
		writeError(w, 404, "M_NOT_FOUND", "no such media")
		return
	}
	w.Header().Set("Content-Type", m.Type)
	_, _ = w.Write(m.Data)
}

// Upload stores data as a person's upload and returns its mxc URI.
func (s *Server) Upload(data []byte, mime, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	id := fmt.Sprintf("m%d", s.nextID)
	s.media[id] = Media{Data: data, Type: mime, Name: name}
	return "mxc://fake.test/" + id
}

// MediaOf returns the upload behind an mxc URI.
func (s *Server) MediaOf(mxc string) (Media, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var id string
	if _, err := fmt.Sscanf(mxc, "mxc://fake.test/%s", &id); err != nil {
		return Media{}, false
	}
	m, ok := s.media[id]
	return m, ok
}
