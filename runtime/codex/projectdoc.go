package codex

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// ProjectDocMaxBytes bounds the AGENTS.md text a confined thread gets:
// codex's own project_doc_max_bytes default (32 KiB).
const ProjectDocMaxBytes = 32 << 10

// projectDocNames are the files codex reads in a directory, the first one
// present winning (codex's AGENTS.override.md, then AGENTS.md).
var projectDocNames = []string{"AGENTS.override.md", "AGENTS.md"}

// ProjectDoc is the AGENTS.md of a confined lane's working directory,
// worded as codex words its own ("# AGENTS.md instructions for <dir>"),
// or "" when there is none. With codex.isolation: lanes codex's own
// discovery is off (IsolationArgs): under the lane profile each of its
// file reads is a sandboxed helper process, about 25 for a thread/start,
// which made a new chat 7 times as slow. The daemon reads it instead, as
// codex's sandboxed read saw it: only the working directory (the
// directories above it were never inside the sandbox), through os.Root so
// that a link cannot lead out of it (the directory is the lane's to
// write), a regular file only (a FIFO would block), at most maxBytes.
// Anything it refuses counts as no file, as it did for codex's sandbox.
func ProjectDoc(dir string, maxBytes int) string {
	if dir == "" || maxBytes <= 0 {
		return ""
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return ""
	}
	defer root.Close()
	for _, name := range projectDocNames {
		text, err := readRegular(root, name, maxBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || strings.TrimSpace(text) == "" {
			return ""
		}
		return "# AGENTS.md instructions for " + dir + "\n\n<INSTRUCTIONS>\n" + text + "\n</INSTRUCTIONS>"
	}
	return ""
}

// errNotRegular refuses what is not a regular file.
var errNotRegular = errors.New("codex: not a regular file")

// readRegular reads at most maxBytes of name beneath root. O_NONBLOCK
// keeps the open of a FIFO from waiting for a writer; the type is then
// checked on the open file, so a swap after a check cannot fool it.
func readRegular(root *os.Root, name string, maxBytes int) (string, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", errNotRegular
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(maxBytes)))
	if err != nil {
		return "", err
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}
