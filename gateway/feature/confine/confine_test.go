package confine

import (
	"slices"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/ext"
)

// dirsHost places every lane's directories under /lanes; any other use of
// the host fails the test (the embedded Host is nil).
type dirsHost struct{ ext.Host }

func (dirsHost) LaneDirs(key string) ext.LaneDirs {
	return ext.LaneDirs{Work: "/lanes/work/" + key, Temp: "/lanes/tmp/" + key, Files: "/lanes/files/" + key}
}

// The lane's own roots come first, its working directory first of all
// (codex resolves relative paths against it), then what the core granted
// (a worktree's top); its temporary directory is its commands' TMPDIR and
// HOME.
func TestRootsPutTheLaneFirst(t *testing.T) {
	c := &Confinement{profile: "lane", host: dirsHost{}}
	got := c.of("k", "/wt/k/app/sub", []string{"/wt/k/app"})
	want := []string{"/wt/k/app/sub", "/lanes/files/k", "/lanes/tmp/k", "/wt/k/app"}
	if got.Profile != "lane" || !slices.Equal(got.Roots, want) {
		t.Errorf("confinement %+v, want profile lane and roots %v", got, want)
	}
	if got.Env["TMPDIR"] != "/lanes/tmp/k" || got.Env["HOME"] != "/lanes/tmp/k" {
		t.Errorf("env %v, want TMPDIR and HOME in the lane's temporary directory", got.Env)
	}
}
