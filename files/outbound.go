package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ResolveOutbound decides whether the file at path may be sent for the
// send_file tool and returns its real path. A relative path is taken from
// workDir (which should be absolute). Once every symlink is resolved, in the
// path and in the roots alike, the file must lie inside one of allowedRoots
// (the lane's project directory and its files directory), be a regular
// file and be at most maxBytes (DefaultMaxBytes when zero or less).
//
// Refusals are *RefusedError, whose Reason can be given to the agent as it
// is: it names no path, and a path outside the roots is refused as outside
// whether or not it exists, so trying paths reveals nothing about what lies
// there.
func ResolveOutbound(path, workDir string, allowedRoots []string, maxBytes int64) (string, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if path == "" {
		return "", refuse(ErrNotFound)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(workDir, path)
	}
	resolved, err := realPath(path)
	if err != nil {
		// Judge a path that does not resolve by the part that does, so
		// "no such file" is only ever said of places the agent may look.
		if !insideAny(existingAncestor(path), allowedRoots) {
			return "", refuse(ErrOutside)
		}
		return "", refuseLookup(err)
	}
	if !insideAny(resolved, allowedRoots) {
		return "", refuse(ErrOutside)
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return "", refuseLookup(err)
	}
	if !info.Mode().IsRegular() {
		return "", refuse(ErrNotRegular)
	}
	if info.Size() > maxBytes {
		return "", tooLargeToSend(maxBytes, info.Size())
	}
	return resolved, nil
}

// realPath is path made absolute with every symlink resolved.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// existingAncestor is the deepest directory above path that resolves, with
// its symlinks resolved: where path would be if it existed.
func existingAncestor(path string) string {
	dir, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return real
		}
	}
}

// insideAny reports whether resolved lies inside one of roots, each resolved
// too: a root configured through a symlink still holds the files under its
// target. A root that does not exist (a files directory before the first
// file) holds nothing.
func insideAny(resolved string, roots []string) bool {
	for _, root := range roots {
		if root == "" {
			continue
		}
		real, err := realPath(root)
		if err == nil && within(real, resolved) {
			return true
		}
	}
	return false
}

// within reports whether path is root or below it; both are clean and
// absolute. Comparing whole elements keeps "/srv/app" from holding
// "/srv/application".
func within(root, path string) bool {
	if path == root {
		return true
	}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	return strings.HasPrefix(path, root)
}

// rootOf finds the allowed root, resolved, that holds path, and path
// relative to it.
func rootOf(path string, roots []string) (root, rel string, ok bool) {
	for _, r := range roots {
		if r == "" {
			continue
		}
		real, err := realPath(r)
		if err != nil || !within(real, path) {
			continue
		}
		if rel, err = filepath.Rel(real, path); err == nil {
			return real, rel, true
		}
	}
	return "", "", false
}

// refuseLookup words a failure to find or read a path for the agent.
func refuseLookup(err error) *RefusedError {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return &RefusedError{Reason: ErrNotFound.Error(), Err: errors.Join(ErrNotFound, err)}
	}
	return &RefusedError{Reason: ErrUnreadable.Error(), Err: errors.Join(ErrUnreadable, err)}
}

func tooLargeToSend(limit, size int64) *RefusedError {
	return &RefusedError{Reason: "larger than " + FormatSize(limit), Err: &TooLargeError{Limit: limit, Got: size}}
}

// CopyOut snapshots the file ResolveOutbound returned into outDir (the
// lane's Store.OutDir) and returns the snapshot's path, so an edit made
// after the agent asked does not change what is sent. The copy is written to
// a temporary file and published under the source's name, made unique, and
// is held to maxBytes (DefaultMaxBytes when zero or less) while it is
// copied, in case the file grew since it was checked.
//
// The file is opened again through an os.Root of the allowed root that
// holds it (allowedRoots as given to ResolveOutbound), so whatever was
// swapped in since the check, a symlink in place of the file or of any
// directory above it, cannot lead out of that root; and it must still be a
// regular file.
func CopyOut(resolved string, allowedRoots []string, outDir string, maxBytes int64) (string, error) {
	if err := os.MkdirAll(outDir, dirMode); err != nil {
		return "", fmt.Errorf("files: copy out: %w", err)
	}
	root, err := os.OpenRoot(outDir)
	if err != nil {
		return "", fmt.Errorf("files: copy out: %w", err)
	}
	defer root.Close()
	tmp, err := copyTemp(resolved, allowedRoots, root, ".", maxBytes)
	if err != nil {
		return "", err
	}
	defer tmp.discard()
	stored, err := tmp.publish(".", SanitizeName(filepath.Base(resolved)))
	if err != nil {
		return "", err
	}
	return filepath.Join(outDir, stored), nil
}

// copyTemp copies the file CopyOut snapshots into a temporary file in dir
// within root, which must exist.
func copyTemp(resolved string, allowedRoots []string, root *os.Root, dir string, maxBytes int64) (*tempFile, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	src, err := openRegular(resolved, allowedRoots)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return nil, fmt.Errorf("files: copy out: %w", err)
	}
	if info.Size() > maxBytes {
		return nil, tooLargeToSend(maxBytes, info.Size())
	}
	return writeTemp(context.Background(), root, dir, src, maxBytes)
}

// openRegular opens a regular file for reading, refusing anything else.
// The open goes through an os.Root of the allowed root holding path, so no
// symlink can lead out of it, and is non-blocking, so a FIFO put in the
// file's place cannot stall the caller.
func openRegular(path string, allowedRoots []string) (*os.File, error) {
	rootDir, rel, ok := rootOf(path, allowedRoots)
	if !ok {
		return nil, refuse(ErrOutside)
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return nil, refuseLookup(err)
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, refuseLookup(err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("files: copy out: %w", err)
	}
	if !info.Mode().IsRegular() {
		_ = f.Close()
		return nil, refuse(ErrNotRegular)
	}
	return f, nil
}
