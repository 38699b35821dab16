// Package sendfile is the files the agent sends: the send_file tool and
// the images codex generates.
package sendfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Files out: the agent sends a file with the send_file dynamic
// tool, registered on every thread/start while a files store is
// configured. The path is resolved against the lane's working directory
// and must lie, once symlinks are resolved, in that directory or in the
// lane's files directory, be a regular file and fit files.max_bytes
// (files.ResolveOutbound). It is copied into the lane's out directory at
// once, so a later edit does not change what is sent, and committed with
// the turn as an outbox row of kind file, before the reply: a crash
// before the commit loses nothing the user was told of, and the commit
// delivers it durably. Images codex generates (imageGeneration items with
// a saved path) are sent the same way.

// Tool is the name of the dynamic tool.
const Tool = "send_file"

// spec is the send_file tool as registered on thread/start.
var spec = codex.DynamicTool{
	Name: Tool,
	Description: "Send a file to the user in this chat. path is relative to the working directory " +
		"or absolute, and must be inside the project directory (or the files the user sent); " +
		"caption is optional text shown with the file.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"path":{"type":"string","description":"the file to send"},` +
		`"caption":{"type":"string","description":"optional text shown with the file"}},` +
		`"required":["path"],"additionalProperties":false}`),
}

// maxCaption is the longest caption kept (Telegram's limit is 1024
// characters; longer ones are cut there, too).
const maxCaption = 1024

// sendFileArgs are send_file's arguments.
type sendFileArgs struct {
	Path    string `json:"path"`
	Caption string `json:"caption"`
}

// Files is the files a turn sends: the send_file tool, offered on every
// thread while a files store is configured, and the images codex generated
// in the turn; both committed with the turn's reply.
type Files struct {
	files *files.Store // nil: no files are sent
	host  ext.Host
	log   *zap.Logger
}

// New sends files through the host's files store.
func New() *Files { return &Files{} }

// Name is the feature's name.
func (s *Files) Name() string { return "sendfile" }

// Register offers the send_file tool on every thread and sends the images
// codex generated with the turn; nothing without a files store.
func (s *Files) Register(h ext.Host) error {
	s.host, s.log, s.files = h, h.Logger(), h.Files()
	if s.files == nil {
		return nil
	}
	h.Tool(spec, s.toolCall)
	// Generated images are snapshotted into the files store; without one
	// there is nothing to send them from.
	h.OnFinished(func(t ext.Turn, res codex.TurnResult) { s.addGeneratedImages(t, res.Items) })
	return nil
}

// toolCall answers send_file for the lane running the thread's turn;
// anything else is refused with a reason the agent reads.
func (s *Files) toolCall(_ context.Context, call codex.ToolCall) codex.ToolResult {
	var args sendFileArgs
	if err := json.Unmarshal(call.Arguments, &args); err != nil {
		return codex.ToolResult{Text: "send_file: arguments must be {\"path\": string, \"caption\"?: string}"}
	}
	l, ok := s.host.LaneOfThread(call.ThreadID)
	if !ok {
		return codex.ToolResult{Text: "send_file is not available here: files cannot be sent from this conversation."}
	}
	cur, ok := l.Running()
	if !ok {
		return codex.ToolResult{Text: "send_file: no turn of this conversation is running."}
	}
	key, dir := l.Key(), cur.Dir()
	f, err := s.snapshot(key, args.Path, dir, []string{dir, s.files.LaneDir(key)})
	if err != nil {
		reason := "the file could not be copied"
		var r *files.RefusedError
		if errors.As(err, &r) {
			reason = r.Reason
		}
		s.log.Info("sendfile.refused", zap.String("lane", key), zap.String("reason", reason), zap.Error(err))
		return codex.ToolResult{Text: "send_file refused: " + reason + ". Nothing was sent."}
	}
	f.Text = truncateRunes(args.Caption, maxCaption)
	if !cur.SendFile(f) {
		s.drop([]store.OutboxMessage{f})
		return codex.ToolResult{Text: "send_file: the turn already ended; nothing was sent."}
	}
	s.log.Info("sendfile.accepted", zap.String("lane", key), zap.String("name", f.FileName), zap.Int64("size", f.FileSize))
	return codex.ToolResult{Success: true,
		Text: fmt.Sprintf("%s (%s) will be sent to the user with your reply.", f.FileName, files.FormatSize(f.FileSize))}
}

// snapshot checks path and copies it into the lane's out directory; the
// row is the file's outbox row without its address. The copy is held in
// the files store until the turn ends (release), so no prune takes it
// before its row is committed.
func (s *Files) snapshot(key, path, dir string, roots []string) (store.OutboxMessage, error) {
	maxBytes := s.files.Limits().MaxBytes
	resolved, err := files.ResolveOutbound(path, dir, roots, maxBytes)
	if err != nil {
		return store.OutboxMessage{}, err
	}
	copied, err := s.files.CopyOut(key, resolved, roots)
	if err != nil {
		return store.OutboxMessage{}, err
	}
	size, mime, err := s.describe(key, copied)
	if err != nil {
		s.drop([]store.OutboxMessage{{SessionKey: key, FilePath: copied}})
		return store.OutboxMessage{}, err
	}
	name := files.SanitizeName(filepath.Base(resolved))
	return store.OutboxMessage{SessionKey: key, OutKind: store.OutboxFile, FilePath: copied, FileName: name, FileMIME: mime, FileSize: size}, nil
}

// describe gives the size and media type (from its name and head) of a
// copy in the lane's out directory, read through the lane's directory: the
// lane may have swapped it for a link already.
func (s *Files) describe(key, copied string) (int64, string, error) {
	f, err := s.files.Open(key, copied)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	head := make([]byte, 512)
	n, _ := f.Read(head)
	mime, _ := files.Detect(filepath.Base(copied), head[:n])
	return info.Size(), mime, nil
}

// generatedImages snapshots the images codex generated in the turn
// (imageGeneration items with a saved path) as file rows. The path is
// codex's own, so the only roots are its directory; size and type are
// checked as for send_file.
func (s *Files) generatedImages(key string, items []codex.Item) []store.OutboxMessage {
	var out []store.OutboxMessage
	for _, it := range items {
		path := it.SavedPath()
		if path == "" {
			continue
		}
		f, err := s.snapshot(key, path, filepath.Dir(path), []string{filepath.Dir(path)})
		if err != nil {
			s.log.Warn("sendfile.image_skipped", zap.String("lane", key), zap.String("item", it.ID), zap.Error(err))
			continue
		}
		out = append(out, f)
	}
	return out
}

// addGeneratedImages adds the images codex generated in the turn to the
// files it sends.
func (s *Files) addGeneratedImages(t ext.Turn, items []codex.Item) {
	images := s.generatedImages(t.Lane().Key(), items)
	if len(images) == 0 {
		return
	}
	if !t.AddFiles(images) {
		s.drop(images)
	}
}

// drop removes copies no turn took, and their holds, through the lane's
// directory (a link put in a copy's place goes, not its target).
func (s *Files) drop(copies []store.OutboxMessage) {
	paths := make([]string, 0, len(copies))
	for _, f := range copies {
		_ = s.files.Remove(f.SessionKey, f.FilePath)
		paths = append(paths, f.FilePath)
	}
	s.files.Release(paths...)
}

// truncateRunes cuts s to at most n runes.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
