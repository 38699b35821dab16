package files

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

const (
	// tempPrefix starts the name of a file still being written. Sanitised
	// names never start with a dot, so a temporary file never shadows one.
	tempPrefix = ".partial-"
	// sniffBytes is how much of a file Detect looks at
	// (net/http.DetectContentType reads no more).
	sniffBytes = 512
	// maxDuplicates bounds the search for a free "name (n).ext".
	maxDuplicates = 10000
)

// tempFile is a complete copy of a file's bytes, written and synced, under a
// temporary name in the directory it will be published in. Every name is
// within root: the lane's directory, where the lane's agent may have put
// links; through root none leads out of it.
type tempFile struct {
	root *os.Root
	path string // within root
	size int64
	head []byte // the first sniffBytes bytes, for Detect
}

// writeTemp streams r into a new temporary file in dir (within root),
// reading at most limit bytes. On any error (the reader's, the disk's, ctx
// ending, the limit) the temporary file is removed. root must stay open
// until the file is published or discarded.
func writeTemp(ctx context.Context, root *os.Root, dir string, r io.Reader, limit int64) (*tempFile, error) {
	f, path, err := createTemp(root, dir)
	if err != nil {
		return nil, fmt.Errorf("files: create temporary file: %w", err)
	}
	t := &tempFile{root: root, path: path}
	if err := t.fill(ctx, f, r, limit); err != nil {
		_ = f.Close()
		t.discard()
		return nil, err
	}
	if err := f.Close(); err != nil {
		t.discard()
		return nil, fmt.Errorf("files: write: %w", err)
	}
	return t, nil
}

// createTemp is os.CreateTemp within root: a new file under a random name,
// created exclusively, so nothing already there (a link among them) is
// opened.
func createTemp(root *os.Root, dir string) (*os.File, string, error) {
	for range 100 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, "", err
		}
		path := filepath.Join(dir, tempPrefix+hex.EncodeToString(b[:]))
		f, err := root.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
		if !errors.Is(err, os.ErrExist) {
			return f, path, err
		}
	}
	return nil, "", fmt.Errorf("files: no free temporary name in %s", dir)
}

func (t *tempFile) fill(ctx context.Context, f *os.File, r io.Reader, limit int64) error {
	head := &headWriter{max: sniffBytes}
	// One byte past the limit tells a file of exactly limit bytes from a
	// larger one without reading the rest of it.
	n, err := io.Copy(io.MultiWriter(f, head), io.LimitReader(ctxReader{ctx, r}, limit+1))
	t.size, t.head = n, head.buf
	if err != nil {
		return fmt.Errorf("files: write: %w", err)
	}
	if n > limit {
		return &TooLargeError{Limit: limit, Got: n}
	}
	// Without a sync a crash soon after the rename can leave the final
	// name pointing at an empty or partial file.
	if err := f.Sync(); err != nil {
		return fmt.Errorf("files: write: %w", err)
	}
	return nil
}

// publish gives the file the first free name among name, "stem (2).ext",
// "stem (3).ext", ... in dir (within root) and returns it. A hard link
// claims the name atomically and fails on one already taken, so nothing is
// ever overwritten, whoever else writes in dir.
func (t *tempFile) publish(dir, name string) (string, error) {
	ext := extension(name)
	stem := name[:len(name)-len(ext)]
	for n := 1; n <= maxDuplicates; n++ {
		candidate := name
		if n > 1 {
			candidate = fitName(stem, " ("+strconv.Itoa(n)+")", ext)
		}
		err := t.root.Link(t.path, filepath.Join(dir, candidate))
		if err == nil {
			t.discard()
			return candidate, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("files: publish %q: %w", candidate, err)
		}
	}
	return "", fmt.Errorf("files: publish %q: %d files of that name already", name, maxDuplicates)
}

// discard removes the temporary name; after publish the data lives on
// under the published one.
func (t *tempFile) discard() {
	if t.path != "" {
		_ = t.root.Remove(t.path)
		t.path = ""
	}
}

// headWriter keeps the first max bytes written to it.
type headWriter struct {
	buf []byte
	max int
}

func (h *headWriter) Write(p []byte) (int, error) {
	if room := h.max - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// ctxReader stops a copy when ctx ends, so a cancelled download from a
// slow platform is not read to the end.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
