package codex

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The working directory's AGENTS.md, worded as codex words it; the
// override wins; a link out of the directory, a FIFO or a directory is
// no file; the text stops at the bound.
func TestProjectDoc(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.md")
	write(t, outside, "OUTSIDE-SECRET")
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		max   int
		want  string // "" for no doc, else a substring
		not   string
	}{
		{name: "plain", setup: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "AGENTS.md"), "Be brief.") },
			want: "\n\n<INSTRUCTIONS>\nBe brief.\n</INSTRUCTIONS>"},
		{name: "override wins", setup: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "AGENTS.md"), "PLAIN")
			write(t, filepath.Join(dir, "AGENTS.override.md"), "OVERRIDE")
		}, want: "OVERRIDE", not: "PLAIN"},
		{name: "none", setup: func(*testing.T, string) {}},
		{name: "link inside", setup: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "docs", "agents.md"), "LINKED-INSIDE")
			link(t, filepath.Join("docs", "agents.md"), filepath.Join(dir, "AGENTS.md"))
		}, want: "LINKED-INSIDE"},
		{name: "absolute link out", setup: func(t *testing.T, dir string) { link(t, outside, filepath.Join(dir, "AGENTS.md")) }},
		{name: "relative link out", setup: func(t *testing.T, dir string) {
			rel, _ := filepath.Rel(dir, outside)
			link(t, rel, filepath.Join(dir, "AGENTS.md"))
		}},
		{name: "fifo", setup: func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "AGENTS.md"), 0o600); err != nil {
				t.Skip(err)
			}
		}},
		{name: "directory", setup: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "AGENTS.md", "x"), "X") }},
		{name: "bounded", setup: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "AGENTS.md"), "HEAD"+strings.Repeat("x", 100)+"TAIL")
		}, max: 50, want: "HEAD", not: "TAIL"},
		{name: "blank", setup: func(t *testing.T, dir string) { write(t, filepath.Join(dir, "AGENTS.md"), " \n") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			max := tt.max
			if max == 0 {
				max = ProjectDocMaxBytes
			}
			got := ProjectDoc(dir, max)
			switch {
			case tt.want == "" && got != "":
				t.Errorf("ProjectDoc = %q, want none", got)
			case tt.want != "" && (!strings.Contains(got, tt.want) || !strings.HasPrefix(got, "# AGENTS.md instructions for "+dir)):
				t.Errorf("ProjectDoc = %q, want %q under codex's heading", got, tt.want)
			case tt.not != "" && strings.Contains(got, tt.not):
				t.Errorf("ProjectDoc = %q, has %q", got, tt.not)
			}
			if strings.Contains(got, "OUTSIDE-SECRET") {
				t.Errorf("read through a link out of the directory: %q", got)
			}
		})
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
