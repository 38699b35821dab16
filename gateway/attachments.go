package gateway

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/store"
)

// Attachment is one file sent with an inbound message (chat.Attachment).
type Attachment = chat.Attachment

// Replies about the files of a message.
const (
	audioNotice = "Audio is passed to the agent as a file: it is not transcribed."
)

// tooLargeNotice tells the lane a file was refused for its size.
func tooLargeNotice(name string, limit int64) string {
	return fmt.Sprintf("%q was not received: it is larger than the %s limit for files. The rest of your message was.",
		name, files.FormatSize(limit))
}

// failedNotice tells the lane a file could not be received.
func failedNotice(name string) string {
	return fmt.Sprintf("%q could not be received (the download failed); please send it again. The rest of your message was.", name)
}

// isTooLarge reports an attachment error that a size limit caused.
func isTooLarge(err error) (*files.TooLargeError, bool) {
	var tl *files.TooLargeError
	ok := errors.As(err, &tl)
	return tl, ok
}

// storeAttachments saves the message's files and returns what was stored
// and the notices for the ones that were not. Without a files store every
// file is refused.
//
// The files are removed through the lane's directory, which its agent can
// write: a link put in a file's place goes, not what it points at.
func discardAttachments(fstore *files.Store, in Inbound, saved []store.Attachment) {
	stored := map[string]bool{}
	for _, a := range in.Attachments {
		if a.Stored != nil {
			stored[a.Stored.Path] = true
		}
	}
	for _, a := range saved {
		if !stored[a.Path] && fstore != nil {
			_ = fstore.Remove(in.Address.SessionKey(), a.Path)
		}
	}
}

// withFiles is the turn text for a message and its files: one line per
// file naming its absolute path, name, type and size, so the agent can
// open it; images also go as image inputs.
func withFiles(text string, att []store.Attachment) string {
	if len(att) == 0 {
		return text
	}
	var b strings.Builder
	b.WriteString(text)
	if text != "" {
		b.WriteString("\n\n")
	}
	for i, a := range att {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[Attached file: %s (name %q, type %s, size %s)]", a.Path, a.Name, a.MIME, files.FormatSize(a.Size))
	}
	return b.String()
}

// imagePaths are the attachments handed to codex as localImage items.
func imagePaths(att []store.Attachment) []string {
	var out []string
	for _, a := range att {
		if a.IsImage {
			out = append(out, a.Path)
		}
	}
	return out
}

// hasAudio reports a stored file codex cannot hear.
// audioPaths are the audio files among att.
func audioPaths(att []store.Attachment) []string {
	var paths []string
	for _, a := range att {
		if isAudio(a) {
			paths = append(paths, a.Path)
		}
	}
	return paths
}

func isAudio(a store.Attachment) bool {
	return strings.HasPrefix(a.MIME, "audio/") || strings.HasPrefix(a.MIME, "application/ogg")
}

func hasAudio(att []store.Attachment) bool { return slices.ContainsFunc(att, isAudio) }
