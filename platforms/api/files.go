package api

import (
	"context"
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// Files out: a file the agent sent rides on the request that
// asked (the answer's "files" and an SSE "file" event), like a notice,
// as {"name","size","url"}; GET /api/lanes/{lane}/files/{id} serves its
// bytes from the lane's out directory, behind the same token. The file
// rows are committed before the reply, so they reach the request first.

// OutDirs names a lane's out directory and opens a file in it through
// the lane's directory, so a link the lane's agent put there is not
// followed out of it (*files.Store implements it).
type OutDirs interface {
	OutDir(sessionKey string) string
	Open(sessionKey, path string) (*os.File, error)
}

// FileRef is one file in an answer and in a "file" event.
type FileRef struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	URL  string `json:"url"`
}

// fileURL is where the lane's file id is served.
func fileURL(lane, id string) string {
	return "/api/lanes/" + url.PathEscape(lane) + "/files/" + url.PathEscape(id)
}

// SendFile hands a file to the request that sent out.InReplyTo, or, with
// none open, to the lane's requests like a notice (deferred to its next
// request when there is none).
func (p *Platform) SendFile(_ context.Context, out gateway.Outbound) (string, error) {
	if out.File == nil {
		return "", errors.New("api: SendFile without a file")
	}
	ref := &FileRef{Name: out.File.Name, Size: out.File.Size, URL: fileURL(out.Address.ChatID, out.File.ID)}
	n := note{row: out.ID, text: out.Text, file: ref}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := primaryOf(p.waiters[out.InReplyTo]); out.InReplyTo != "" && w != nil {
		if p.carryLocked(w, out.ID) {
			w.addNotice(n, nil, nil)
		}
		return p.nextID("file-"), deferred(out)
	}
	return p.shareNoteLocked(out, n)
}

// getFile serves a file the agent sent on the lane.
func (p *Platform) getFile(w http.ResponseWriter, r *http.Request) {
	lane, id := r.PathValue("lane"), r.PathValue("id")
	if !laneName.MatchString(lane) || id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	if p.cfg.Files == nil {
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	key := laneAddress(lane).SessionKey()
	f, err := p.cfg.Files.Open(key, filepath.Join(p.cfg.Files.OutDir(key), id))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			p.log.Warn("api.file_open_failed", zap.String("lane", lane), zap.Error(err))
		}
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": id}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, id, info.ModTime(), f)
}
