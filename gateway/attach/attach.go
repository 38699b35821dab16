// Package attach takes in the files of an inbound message and says them to
// Codex: each is saved in the lane's directory of the files store before
// the message is recorded, a file that cannot be taken is told to the
// lane (the rest of the message still runs), and the turn names every
// file by its path, hands images as image inputs and audio to a feature
// that transcribes it.
package attach

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/store"
)

// AudioNotice tells a lane that nothing transcribes its audio.
const AudioNotice = "Audio is passed to the agent as a file: it is not transcribed."

// Save saves the message's files in fs and returns what was stored and
// the notices for the ones that were not. Without a files store (fs nil)
// every file is refused.
func Save(ctx context.Context, fs *files.Store, log *zap.Logger, in chat.Inbound) ([]store.Attachment, []string) {
	var saved []store.Attachment
	var notices []string
	for _, a := range in.Attachments {
		s, err := save(ctx, fs, in, a)
		if err != nil {
			name := files.SanitizeName(a.Name)
			log.Warn("inbound.file_refused", zap.String("platform", in.Address.Platform),
				zap.String("message", in.MessageID), zap.String("name", name), zap.Error(err))
			notices = append(notices, refusedNotice(name, err))
			continue
		}
		saved = append(saved, store.Attachment{Path: s.Path, Name: s.Name, MIME: s.MIME, Size: s.Size, IsImage: s.IsImage})
	}
	return saved, notices
}

func save(ctx context.Context, fs *files.Store, in chat.Inbound, a chat.Attachment) (files.Saved, error) {
	switch {
	case a.Stored != nil:
		return *a.Stored, nil
	case a.Err != nil:
		return files.Saved{}, a.Err
	case fs == nil:
		return files.Saved{}, errors.New("gateway: no files store configured")
	case a.Open == nil:
		return files.Saved{}, errors.New("gateway: attachment has nothing to read")
	}
	if limit := fs.Limits().MaxBytes; a.Size > limit {
		return files.Saved{}, &files.TooLargeError{Limit: limit, Got: a.Size}
	}
	r, err := a.Open(ctx)
	if err != nil {
		return files.Saved{}, fmt.Errorf("gateway: fetch attachment: %w", err)
	}
	defer r.Close()
	return fs.Save(ctx, in.Address.SessionKey(), in.MessageID, a.Name, r)
}

// refusedNotice tells the lane a file was not received, and why.
func refusedNotice(name string, err error) string {
	if tl, ok := errors.AsType[*files.TooLargeError](err); ok {
		return fmt.Sprintf("%q was not received: it is larger than the %s limit for files. The rest of your message was.",
			name, files.FormatSize(tl.Limit))
	}
	return fmt.Sprintf("%q could not be received (the download failed); please send it again. The rest of your message was.", name)
}

// Discard removes files Save stored for a message that turned out to be
// a redelivery (the first delivery's files are the ones it runs with) or
// could not be recorded; files an adapter stored itself stay.
//
// The files are removed through the lane's directory, which its agent can
// write: a link put in a file's place goes, not what it points at.
func Discard(fs *files.Store, in chat.Inbound, saved []store.Attachment) {
	if fs == nil {
		return
	}
	stored := map[string]bool{}
	for _, a := range in.Attachments {
		if a.Stored != nil {
			stored[a.Stored.Path] = true
		}
	}
	for _, a := range saved {
		if !stored[a.Path] {
			_ = fs.Remove(in.Address.SessionKey(), a.Path)
		}
	}
}

// TurnText is the turn text for a message and its files: one line per
// file naming its absolute path, name, type and size, so the agent can
// open it; images also go as image inputs (Images).
func TurnText(text string, att []store.Attachment) string {
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

// Images are the paths of the attachments handed to codex as localImage
// items.
func Images(att []store.Attachment) []string {
	var out []string
	for _, a := range att {
		if a.IsImage {
			out = append(out, a.Path)
		}
	}
	return out
}

// Audio are the paths of the audio files among att.
func Audio(att []store.Attachment) []string {
	var paths []string
	for _, a := range att {
		if isAudio(a) {
			paths = append(paths, a.Path)
		}
	}
	return paths
}

// HasAudio reports a stored file codex cannot hear.
func HasAudio(att []store.Attachment) bool { return slices.ContainsFunc(att, isAudio) }

func isAudio(a store.Attachment) bool {
	return strings.HasPrefix(a.MIME, "audio/") || strings.HasPrefix(a.MIME, "application/ogg")
}
