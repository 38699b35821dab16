package files

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sandbox is a lane's project directory and files directory, with
// something secret beside them.
type sandbox struct {
	base, project, laneFiles, secret string
}

func newSandbox(t *testing.T) sandbox {
	t.Helper()
	base := t.TempDir()
	sb := sandbox{
		base:      base,
		project:   filepath.Join(base, "project"),
		laneFiles: filepath.Join(base, "files", "lane"),
		secret:    filepath.Join(base, "outside", "secret.txt"),
	}
	for _, dir := range []string{sb.project, sb.laneFiles, filepath.Dir(sb.secret), filepath.Join(sb.project, "src")} {
		mustMkdir(t, dir)
	}
	mustWrite(t, sb.secret, "secret")
	mustWrite(t, filepath.Join(sb.project, "src", "main.go"), "package main")
	mustWrite(t, filepath.Join(sb.laneFiles, "photo.png"), pngHead)
	mustWrite(t, filepath.Join(sb.project, "big.bin"), strings.Repeat("x", 101))
	mustSymlink(t, sb.secret, filepath.Join(sb.project, "link-out.txt"))
	mustSymlink(t, filepath.Dir(sb.secret), filepath.Join(sb.project, "dir-out"))
	mustSymlink(t, filepath.Join(sb.project, "src", "main.go"), filepath.Join(sb.project, "link-in.go"))
	mustSymlink(t, sb.project, filepath.Join(base, "project-link"))
	mustSymlink(t, "loop", filepath.Join(sb.project, "loop"))
	if err := syscall.Mkfifo(filepath.Join(sb.project, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	return sb
}

// roots are the sandbox's allowed roots: the project and the lane's files.
func (sb sandbox) roots() []string { return []string{sb.project, sb.laneFiles} }

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestResolveOutbound(t *testing.T) {
	sb := newSandbox(t)
	tests := []struct {
		name    string
		path    string
		workDir string   // the project when empty
		roots   []string // the project and the lane's files when nil
		want    string   // the resolved path, when allowed
		wantErr error
		reason  string
	}{
		{name: "relative inside", path: "src/main.go", want: filepath.Join(sb.project, "src", "main.go")},
		{name: "absolute inside", path: filepath.Join(sb.project, "src", "main.go"), want: filepath.Join(sb.project, "src", "main.go")},
		{name: "in the lane's files", path: filepath.Join(sb.laneFiles, "photo.png"), want: filepath.Join(sb.laneFiles, "photo.png")},
		{name: "relative from a subdirectory", path: "../src/./main.go", workDir: filepath.Join(sb.project, "src"), want: filepath.Join(sb.project, "src", "main.go")},
		{name: "symlink staying inside", path: "link-in.go", want: filepath.Join(sb.project, "src", "main.go")},
		{name: "root given through a symlink", path: filepath.Join(sb.project, "src", "main.go"), roots: []string{filepath.Join(sb.base, "project-link")}, want: filepath.Join(sb.project, "src", "main.go")},
		{name: "path through a symlinked root", path: filepath.Join(sb.base, "project-link", "src", "main.go"), want: filepath.Join(sb.project, "src", "main.go")},
		{name: "parent traversal", path: "../../etc/passwd", wantErr: ErrOutside, reason: "outside the project directory"},
		{name: "traversal to a sibling", path: "../outside/secret.txt", wantErr: ErrOutside, reason: "outside the project directory"},
		{name: "missing outside", path: "/nonexistent/x", wantErr: ErrOutside, reason: "outside the project directory"},
		{name: "missing behind a symlinked directory escaping", path: "dir-out/nope.txt", wantErr: ErrOutside, reason: "outside the project directory"},
		{name: "absolute outside", path: sb.secret, wantErr: ErrOutside, reason: "outside the project directory"},
		{name: "symlink pointing outside", path: "link-out.txt", wantErr: ErrOutside, reason: "outside the project directory"},
		{name: "symlinked directory escaping", path: "dir-out/secret.txt", wantErr: ErrOutside, reason: "outside the project directory"},
		{name: "prefix of a root is not the root", path: sb.secret, roots: []string{filepath.Join(sb.base, "out")}, wantErr: ErrOutside, reason: "outside the project directory"},
		{name: "directory", path: "src", wantErr: ErrNotRegular, reason: "not a regular file"},
		{name: "the root itself", path: ".", wantErr: ErrNotRegular, reason: "not a regular file"},
		{name: "fifo", path: "fifo", wantErr: ErrNotRegular, reason: "not a regular file"},
		{name: "missing", path: "nope.txt", wantErr: ErrNotFound, reason: "no such file"},
		{name: "through a file", path: "src/main.go/x", wantErr: ErrNotFound, reason: "no such file"},
		{name: "symlink loop", path: "loop", wantErr: ErrUnreadable, reason: "cannot be read"},
		{name: "empty", path: "", wantErr: ErrNotFound, reason: "no such file"},
		{name: "no roots", path: "src/main.go", roots: []string{}, wantErr: ErrOutside, reason: "outside the project directory"},
		{name: "oversized", path: "big.bin", reason: "larger than 100 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			workDir, roots := tt.workDir, tt.roots
			if workDir == "" {
				workDir = sb.project
			}
			if roots == nil {
				roots = sb.roots()
			}
			got, err := ResolveOutbound(tt.path, workDir, roots, 100)
			if tt.reason == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ResolveOutbound(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
				}
				return
			}
			var refused *RefusedError
			if !errors.As(err, &refused) || refused.Reason != tt.reason {
				t.Fatalf("ResolveOutbound(%q) = %q, %v; want refused: %s", tt.path, got, err, tt.reason)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v is not %v", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), sb.base) {
				t.Errorf("error %q names a path", err)
			}
		})
	}
}

func TestResolveOutboundTooLargeNamesTheLimit(t *testing.T) {
	sb := newSandbox(t)
	_, err := ResolveOutbound("big.bin", sb.project, []string{sb.project}, 100)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 100 || tooLarge.Got != 101 {
		t.Fatalf("error = %v, want a TooLargeError{100, 101}", err)
	}
	if got, want := tooLargeToSend(DefaultMaxBytes, DefaultMaxBytes+1).Reason, "larger than 20 MiB"; got != want {
		t.Errorf("reason at the default limit = %q, want %q", got, want)
	}
}

func TestCopyOut(t *testing.T) {
	sb := newSandbox(t)
	src := filepath.Join(sb.project, "src", "main.go")
	outDir := filepath.Join(sb.laneFiles, outName)

	first, err := CopyOut(src, sb.roots(), outDir, 100)
	if err != nil {
		t.Fatal(err)
	}
	second, err := CopyOut(src, sb.roots(), outDir, 100)
	if err != nil {
		t.Fatal(err)
	}
	if first == second || filepath.Dir(first) != outDir || filepath.Dir(second) != outDir {
		t.Fatalf("copies at %q and %q, want two names in %q", first, second, outDir)
	}
	mustWrite(t, src, "edited after the agent asked")
	for _, copied := range []string{first, second} {
		if got, err := os.ReadFile(copied); err != nil || string(got) != "package main" {
			t.Errorf("%s holds %q, %v; want the bytes at the time of the copy", filepath.Base(copied), got, err)
		}
	}
	if got := entries(t, outDir); len(got) != 2 {
		t.Errorf("out directory holds %q, want the two copies only", got)
	}
}

func TestCopyOutRefusals(t *testing.T) {
	sb := newSandbox(t)
	tests := []struct {
		name    string
		src     string
		wantErr func(error) bool
	}{
		{"too large", filepath.Join(sb.project, "big.bin"), func(err error) bool {
			var tooLarge *TooLargeError
			return errors.As(err, &tooLarge) && tooLarge.Limit == 100
		}},
		{"became a symlink out", filepath.Join(sb.project, "link-out.txt"), func(err error) bool {
			var refused *RefusedError
			return errors.As(err, &refused)
		}},
		// A directory above the file swapped for a symlink out of the
		// project after ResolveOutbound said yes.
		{"a directory above became a symlink out", filepath.Join(sb.project, "dir-out", "secret.txt"), func(err error) bool {
			var refused *RefusedError
			return errors.As(err, &refused)
		}},
		{"outside every root", sb.secret, func(err error) bool { return errors.Is(err, ErrOutside) }},
		{"became a fifo", filepath.Join(sb.project, "fifo"), func(err error) bool { return errors.Is(err, ErrNotRegular) }},
		{"vanished", filepath.Join(sb.project, "gone.txt"), func(err error) bool { return errors.Is(err, ErrNotFound) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outDir := filepath.Join(t.TempDir(), outName)
			if _, err := CopyOut(tt.src, sb.roots(), outDir, 100); !tt.wantErr(err) {
				t.Fatalf("CopyOut error = %v", err)
			}
			if got := entries(t, outDir); len(got) != 0 {
				t.Fatalf("out directory holds %q after a refusal", got)
			}
		})
	}
}
