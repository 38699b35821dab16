package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"strings"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
)

// multipartType is the media type of a message with files: fields text,
// user and id (as in the JSON body) and any number of "file" parts.
const multipartType = "multipart/form-data"

// MaxFiles is how many files one message may carry.
const MaxFiles = 16

// maxUploadBytes bounds a whole multipart body: every file at its limit,
// the fields and the framing.
func maxUploadBytes(maxFile int64) int64 { return MaxFiles*maxFile + maxBody + 64<<10 }

func isMultipart(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == multipartType
}

// upload is the files of one multipart message, spooled while the message
// is accepted: the fields may follow the files, and the gateway stores the
// files under the lane and message id only once both are known.
type upload struct {
	parts []spooled
	// budget is the spool's, shared by all requests; reserved is what
	// this upload holds of it, spooled what it wrote (spool.go).
	budget            *spoolBudget
	reserved, spooled int64
}

type spooled struct {
	name, mime, path string
	size             int64
}

func (u *upload) count() int {
	if u == nil {
		return 0
	}
	return len(u.parts)
}

// attachments hands the spooled files to the gateway.
func (u *upload) attachments() []gateway.Attachment {
	if u == nil {
		return nil
	}
	out := make([]gateway.Attachment, 0, len(u.parts))
	for _, s := range u.parts {
		path := s.path
		out = append(out, gateway.Attachment{Name: s.name, MIME: s.mime, Size: s.size,
			Open: func(context.Context) (io.ReadCloser, error) { return os.Open(path) }})
	}
	return out
}

// remove deletes the spool files (the gateway has its own copies) and
// gives their room back to the spool. It may be called again: the second
// call finds nothing.
func (u *upload) remove() {
	if u == nil {
		return
	}
	for _, s := range u.parts {
		_ = os.Remove(s.path)
	}
	u.parts = nil
	if u.budget != nil && u.reserved > 0 {
		u.budget.release(u.reserved)
	}
	u.reserved, u.spooled = 0, 0
}

// readUpload reads a multipart message as it arrives, each file streamed to
// the spool and held to MaxFileBytes. On failure it has answered (413 for a
// file or body over its limit, 503 with Retry-After while the spool is too
// full to take it) and removed what it spooled.
func (p *Platform) readUpload(w http.ResponseWriter, r *http.Request) (string, messageRequest, *upload, bool) {
	lane := r.PathValue("lane")
	var req messageRequest
	up := &upload{budget: p.spool}
	if !laneName.MatchString(lane) {
		writeError(w, http.StatusBadRequest, "lane name must be 1-128 characters of A-Z a-z 0-9 . _ -")
		return "", req, up, false
	}
	fail := func(code int, msg string) (string, messageRequest, *upload, bool) {
		w.Header().Set("Connection", "close") // the rest of the body is not read
		if code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", retryAfterSpool)
		}
		writeError(w, code, msg)
		up.remove()
		return "", req, nil, false
	}
	if err := up.reserveBody(r.ContentLength, p.cfg.MaxFileBytes); err != nil {
		return fail(p.partError(err))
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return fail(http.StatusBadRequest, "multipart body has no boundary")
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(p.partError(err))
		}
		switch name := part.FormName(); name {
		case "text", "user", "id":
			v, err := io.ReadAll(io.LimitReader(part, MaxTextBytes+1))
			if err != nil {
				return fail(p.partError(err))
			}
			switch name {
			case "text":
				req.Text = string(v)
			case "user":
				req.User = string(v)
			case "id":
				req.ID = string(v)
			}
		case "file":
			if len(up.parts) == MaxFiles {
				return fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("a message carries at most %d files", MaxFiles))
			}
			s, err := p.spoolPart(up, part)
			if err != nil {
				var tl *files.TooLargeError
				if errors.As(err, &tl) {
					return fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("file %q is larger than the %s limit for files",
						files.SanitizeName(part.FileName()), files.FormatSize(tl.Limit)))
				}
				return fail(p.partError(err))
			}
			up.parts = append(up.parts, s)
		default:
			return fail(http.StatusBadRequest, fmt.Sprintf("unknown multipart field %q (use text, user, id and file)", name))
		}
		_ = part.Close()
	}
	// Read to the end, so net/http lifts the body's read deadline
	// (readBody explains why).
	_, _ = io.Copy(io.Discard, r.Body)
	if len(up.parts) > 0 {
		req.files = up
	}
	if !checkMessage(w, &req) {
		up.remove()
		return "", req, nil, false
	}
	return lane, req, up, true
}

// spoolPart writes one file part of up to a temporary file in the spool,
// at most MaxFileBytes, within the spool's budget.
func (p *Platform) spoolPart(up *upload, part *multipart.Part) (spooled, error) {
	s := spooled{name: part.FileName(), mime: part.Header.Get("Content-Type")}
	f, err := os.CreateTemp(p.cfg.SpoolDir, "gatewayd-upload-*")
	if err != nil {
		return s, fmt.Errorf("api: spool upload: %w", err)
	}
	s.path = f.Name()
	n, err := io.Copy(spoolWriter{f: f, u: up}, io.LimitReader(part, p.cfg.MaxFileBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > p.cfg.MaxFileBytes {
		err = &files.TooLargeError{Limit: p.cfg.MaxFileBytes, Got: n}
	}
	if err != nil {
		_ = os.Remove(s.path)
		return s, err
	}
	s.size = n
	return s, nil
}

// partError is the answer to a multipart body that could not be read or
// spooled.
func (p *Platform) partError(err error) (int, string) {
	if code, msg, ok := spoolFailure(err); ok {
		return code, msg
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit)
	}
	if code, msg := p.bodyError(err, ""); code != http.StatusBadRequest {
		return code, msg
	}
	if strings.Contains(err.Error(), "multipart") {
		return http.StatusBadRequest, "malformed multipart body"
	}
	return http.StatusBadRequest, "could not read the request body"
}
