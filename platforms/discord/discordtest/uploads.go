package discordtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// MaxUploadBytes is the fake's upload limit per request, Discord's for a
// server without boosts.
const MaxUploadBytes = 10 << 20

// Attachment is one file the bot uploaded with a message.
type Attachment struct {
	Name, ContentType string
	Data              []byte
}

// decodeUpload reads a multipart message create as Discord takes it: the
// message as payload_json and each file as a files[n] part.
func decodeUpload(w http.ResponseWriter, r *http.Request) (messageBody, bool) {
	var body messageBody
	r.Body = http.MaxBytesReader(w, r.Body, MaxUploadBytes+1<<20)
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, 40005, "Request entity too large")
		return body, false
	}
	if err := json.Unmarshal([]byte(r.FormValue("payload_json")), &body); err != nil {
		writeError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return body, false
	}
	if body.Content != nil && utf8.RuneCountInString(*body.Content) > 2000 {
		writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body: content: Must be 2000 or fewer in length.")
		return body, false
	}
	total := 0
	for field, fhs := range r.MultipartForm.File {
		if !strings.HasPrefix(field, "files[") {
			continue
		}
		for _, fh := range fhs {
			f, err := fh.Open()
			if err != nil {
				writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
				return body, false
			}
			data, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				writeError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
				return body, false
			}
			total += len(data)
			body.files = append(body.files, Attachment{Name: fh.Filename, ContentType: fh.Header.Get("Content-Type"), Data: data})
		}
	}
	if total > MaxUploadBytes {
		writeError(w, http.StatusRequestEntityTooLarge, 40005, "Request entity too large")
		return body, false
	}
	return body, true
}
