package codextest

import (
	"os"
	"slices"
	"strings"
)

// Probe is one shell command for isolation tests, run as a lane's command:
// per path of reads it prints "READ <path>: <first bytes>" or, when the
// path cannot be read, "DENIED <path>"; per directory of lists it prints
// the names the command sees there between "LIST <dir>" and "END <dir>";
// it tries each write; it ends with PROBE-DONE.
func Probe(reads, writes, lists []string) string {
	var b strings.Builder
	for _, p := range reads {
		b.WriteString("if out=$(cat '" + p + "' 2>/dev/null || ls '" + p + "' 2>/dev/null); then echo \"READ " + p + ": $out\" | head -c 200; echo; else echo 'DENIED " + p + "'; fi; ")
	}
	for _, d := range lists {
		b.WriteString("echo 'LIST " + d + "'; ls -A '" + d + "' 2>/dev/null; echo 'END " + d + "'; ")
	}
	// After the listings: a write into a skeleton lands on the sandbox's
	// throwaway tmpfs and would show up there.
	for _, p := range writes {
		b.WriteString("{ echo WRITTEN > '" + p + "'; } 2>/dev/null; ")
	}
	b.WriteString("echo PROBE-DONE")
	return b.String()
}

// Denied reports whether the probe's output says path could not be read:
// a line of its own, so a path is not taken for a longer one it starts.
func Denied(out, path string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "DENIED "+path {
			return true
		}
	}
	return false
}

// Listed is what the probe's listing of dir showed. The sandbox shows the
// directories above a lane's own roots as empty skeletons, so a listing
// of one names only the way down to them.
func Listed(out, dir string) []string {
	_, rest, ok := strings.Cut(out, "LIST "+dir+"\n")
	if !ok {
		return nil
	}
	body, _, _ := strings.Cut(rest, "END "+dir)
	return strings.Fields(body)
}

// Confined is what a probe on a confined lane must not reach.
type Confined struct {
	Secrets []string // each must print its own DENIED line
	Words   []string // none may appear in the output (secret contents)
	Dir     string   // a directory above the lane's roots, listed by the probe
	Allowed []string // the only names Dir may show: the way down to the roots
	Escapes []string // writes outside the lane: none may exist afterwards
}

// Leaks lists, from the probe's output and the disk, what the lane reached.
func (c Confined) Leaks(out string) []string {
	var leaks []string
	for _, p := range c.Secrets {
		if !Denied(out, p) {
			leaks = append(leaks, "read "+p)
		}
	}
	for _, w := range c.Words {
		if strings.Contains(out, w) {
			leaks = append(leaks, "saw "+w)
		}
	}
	for _, name := range Listed(out, c.Dir) {
		if !slices.Contains(c.Allowed, name) {
			leaks = append(leaks, "sees "+name+" in "+c.Dir)
		}
	}
	for _, p := range c.Escapes {
		if _, err := os.Stat(p); err == nil {
			leaks = append(leaks, "wrote "+p)
		}
	}
	return leaks
}
