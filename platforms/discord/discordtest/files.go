package discordtest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// CDN is the host of attachment URLs; an adapter whose APIURL is the fake
// sends them here.
const CDN = "https://cdn.discordapp.com"

// File is an attachment of a posted message.
type File struct {
	Name, ContentType string
	Data              []byte
	// Size, when set, is the size the message claims instead of len(Data).
	Size int
	// Broken makes the download answer 500.
	Broken bool
}

// attachLocked stores f and returns the message attachment pointing at it.
func (s *Server) attachLocked(channelID string, f File) *discordgo.MessageAttachment {
	id := s.nextIDLocked()
	path := "/attachments/" + channelID + "/" + id + "/" + url.PathEscape(f.Name)
	if s.files == nil {
		s.files = map[string]File{}
	}
	s.files[id] = f
	size := f.Size
	if size == 0 {
		size = len(f.Data)
	}
	return &discordgo.MessageAttachment{ID: id, URL: CDN + path, ProxyURL: CDN + path, Filename: f.Name,
		ContentType: f.ContentType, Size: size}
}

// Downloads returns the names of the attachments fetched so far.
func (s *Server) Downloads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.downloads...)
}

func (s *Server) serveAttachment(w http.ResponseWriter, r *http.Request) {
	// /attachments/<channel>/<id>/<name>: the id finds the file.
	seg := strings.SplitN(strings.TrimPrefix(r.URL.EscapedPath(), "/attachments/"), "/", 3)
	s.mu.Lock()
	var f File
	ok := len(seg) == 3
	if ok {
		f, ok = s.files[seg[1]]
	}
	if ok {
		s.downloads = append(s.downloads, f.Name)
	}
	s.mu.Unlock()
	switch {
	case !ok:
		http.Error(w, "Not Found", http.StatusNotFound)
	case f.Broken:
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
	default:
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
		w.Write(f.Data)
	}
}
