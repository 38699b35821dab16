package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
)

// bodyRule is what a route accepts as its request body. A route that will
// take another form (multipart uploads on the messages route) lists its
// media type here rather than getting a check of its own.
type bodyRule struct {
	mediaTypes []string // accepted Content-Type media types; parameters (charset) are ignored
	maxBytes   int64    // larger bodies are answered 413
	// streamed are media types (among mediaTypes) whose body the handler
	// reads itself, as it arrives, up to streamMaxBytes: uploads, which
	// are not held in memory.
	streamed       []string
	streamMaxBytes int64
}

// messageBody is the rule of the messages route: JSON, or a
// multipart/form-data upload of the same fields and files streamed to
// disk, each file up to maxFile bytes.
func messageBody(maxFile int64) bodyRule {
	return bodyRule{mediaTypes: []string{"application/json", multipartType}, maxBytes: maxBody,
		streamed: []string{multipartType}, streamMaxBytes: maxUploadBytes(maxFile)}
}

// streams reports whether the body of contentType is left to the handler.
func (b bodyRule) streams(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	for _, s := range b.streamed {
		if mt == s {
			return true
		}
	}
	return false
}

// jsonBody is the rule of the JSON routes. Requiring the JSON media type
// is part of the cross-site defence: a page can send text/plain or a form
// to another origin without the browser asking first, but not JSON.
func jsonBody(maxBytes int64) bodyRule {
	return bodyRule{mediaTypes: []string{"application/json"}, maxBytes: maxBytes}
}

func (b bodyRule) accepts(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	for _, ok := range b.mediaTypes {
		if mt == ok {
			return true
		}
	}
	return false
}

// acceptBody answers 415, 413 or 408 for a body the route does not take,
// and otherwise hands next the body, read in full.
func (p *Platform) acceptBody(rule bodyRule, next http.Handler) http.Handler {
	tooLarge := fmt.Sprintf("request body exceeds %d bytes", rule.maxBytes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !rule.accepts(r.Header.Get("Content-Type")) {
			writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be "+strings.Join(rule.mediaTypes, " or "))
			return
		}
		if rule.streams(r.Header.Get("Content-Type")) {
			if r.ContentLength > rule.streamMaxBytes {
				w.Header().Set("Connection", "close")
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", rule.streamMaxBytes))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, rule.streamMaxBytes)
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > rule.maxBytes {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusRequestEntityTooLarge, tooLarge)
			return
		}
		body, err := readBody(w, r, rule.maxBytes)
		if err != nil {
			// The rest of the body is not worth reading: the connection
			// ends with this answer.
			w.Header().Set("Connection", "close")
			code, msg := p.bodyError(err, tooLarge)
			writeError(w, code, msg)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// readBody reads the whole body. Reading it to the end matters: only then
// does net/http lift the request's read deadline (Server.ReadTimeout, our
// body timeout) and watch the connection for a client that goes away, so
// the deadline bounds the body but not a long turn's wait or stream.
func readBody(w http.ResponseWriter, r *http.Request, maxBytes int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
}

// bodyError is the answer to a body that could not be read.
func (p *Platform) bodyError(err error, tooLarge string) (int, string) {
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, tooLarge
	case errors.As(err, &netErr) && netErr.Timeout():
		return http.StatusRequestTimeout, fmt.Sprintf("request body not received within %s", p.cfg.BodyTimeout)
	}
	return http.StatusBadRequest, "could not read the request body"
}
