package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	rpmutils "github.com/sassoftware/go-rpmutils"
)

const repoRoot = "../.."

// fakeBinary stands in for gatewayd where only the packaging is tested.
func fakeBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gatewayd")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho fake gatewayd\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// buildPackages returns the .deb and the .rpm built from binary.
func buildPackages(t *testing.T, version, arch, binary string) (deb, rpm string) {
	t.Helper()
	paths, err := build(options{root: repoRoot, version: version, arch: arch, binary: binary, out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 {
		t.Fatalf("built %q, want a .deb and an .rpm", paths)
	}
	return paths[0], paths[1]
}

func TestPackageVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3":              "1.2.3",
		"1.2.3":               "1.2.3",
		"v1.2.3-4-gabc1234":   "1.2.3+4.gabc1234",
		"v1.2.3-rc1":          "1.2.3-rc1",
		"8fd12e1":             "0.0.0+8fd12e1",
		"8fd12e1-dirty":       "0.0.0+8fd12e1.dirty",
		"v1.2.3-dirty":        "1.2.3+dirty",
		"v1.2.3-4-gabc-dirty": "1.2.3+4.gabc.dirty",
		"dev":                 "0.0.0+dev",
	} {
		got, err := packageVersion(in)
		if err != nil || got != want {
			t.Errorf("packageVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := packageVersion(""); err == nil {
		t.Error("packageVersion(\"\") succeeded")
	}
}

func TestFileNames(t *testing.T) {
	bin := fakeBinary(t)
	for arch, want := range map[string][2]string{
		"amd64": {"gatewayd_1.2.3_amd64.deb", "gatewayd-1.2.3-1.x86_64.rpm"},
		"arm64": {"gatewayd_1.2.3_arm64.deb", "gatewayd-1.2.3-1.aarch64.rpm"},
	} {
		deb, rpm := buildPackages(t, "v1.2.3", arch, bin)
		if filepath.Base(deb) != want[0] || filepath.Base(rpm) != want[1] {
			t.Errorf("%s: built %s and %s, want %s and %s", arch, filepath.Base(deb), filepath.Base(rpm), want[0], want[1])
		}
	}
	if _, err := build(options{root: repoRoot, version: "1.0.0", arch: "386", binary: bin, out: t.TempDir()}); err == nil {
		t.Error("-arch 386 was accepted")
	}
}

// wantFiles are the package's own paths: mode, owner and group.
var wantFiles = map[string][3]string{
	binPath:    {"0755", "root", "root"},
	configDir:  {"0750", "root", "gatewayd"},
	configPath: {"0640", "root", "gatewayd"},
	envPath:    {"0640", "root", "gatewayd"},
	stateDir:   {"0700", "gatewayd", "gatewayd"},
}

func TestDeb(t *testing.T) {
	dpkgDeb, err := exec.LookPath("dpkg-deb")
	if err != nil {
		t.Skip("dpkg-deb not installed")
	}
	deb, _ := buildPackages(t, "v1.2.3", "amd64", fakeBinary(t))

	// dpkg-deb --contents: drwxr-x--- root/gatewayd 0 2026-01-01 00:00 ./etc/gatewayd/
	out, err := exec.Command(dpkgDeb, "--contents", deb).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 {
			t.Fatalf("dpkg-deb --contents line %q", sc.Text())
		}
		p := strings.TrimSuffix(strings.TrimPrefix(f[5], "."), "/")
		got[p] = [2]string{f[0], f[1]}
	}
	want := map[string][2]string{
		binPath:     {"-rwxr-xr-x", "root/root"},
		debUnitPath: {"-rw-r--r--", "root/root"},
		configDir:   {"drwxr-x---", "root/gatewayd"},
		configPath:  {"-rw-r-----", "root/gatewayd"},
		envPath:     {"-rw-r-----", "root/gatewayd"},
		stateDir:    {"drwx------", "gatewayd/gatewayd"},
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %v, want %v", p, got[p], w)
		}
	}
	for p := range got {
		if strings.HasPrefix(p, "/usr/local") || strings.HasPrefix(p, "/usr/lib/systemd") {
			t.Errorf("unexpected path %s", p)
		}
	}

	ctrl := t.TempDir()
	if out, err := exec.Command(dpkgDeb, "-e", deb, ctrl).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -e: %v\n%s", err, out)
	}
	conffiles, err := os.ReadFile(filepath.Join(ctrl, "conffiles"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(conffiles)); strings.Join(got, " ") != envPath+" "+configPath {
		t.Errorf("conffiles %q, want %s and %s", got, envPath, configPath)
	}
	for _, s := range []string{"preinst", "postinst", "prerm", "postrm"} {
		fi, err := os.Stat(filepath.Join(ctrl, s))
		if err != nil {
			t.Errorf("no %s: %v", s, err)
			continue
		}
		if fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable: %v", s, fi.Mode())
		}
	}
	if b, err := os.ReadFile(filepath.Join(ctrl, "postinst")); err == nil && strings.Contains(string(b), "@CODEX_VERSION@") {
		t.Error("postinst still has @CODEX_VERSION@")
	}

	info, err := exec.Command(dpkgDeb, "-I", deb).Output()
	if err != nil {
		t.Fatal(err)
	}
	codex, err := pinnedCodex(filepath.Join(repoRoot, "tools", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"Package: gatewayd", "Version: 1.2.3", "Architecture: amd64", "Recommends: nodejs", "Suggests: npm",
		"Homepage: " + homepage, "Maintainer: " + maintainer,
		"npm install -g @openai/codex@" + codex,
	} {
		if !strings.Contains(string(info), line) {
			t.Errorf("dpkg-deb -I has no %q:\n%s", line, info)
		}
	}

	root := t.TempDir()
	if out, err := exec.Command(dpkgDeb, "-x", deb, root).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
	}
	unit, err := os.ReadFile(filepath.Join(root, debUnitPath))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "\nExecStart=/usr/bin/gatewayd run --config /etc/gatewayd/gatewayd.yaml\n") ||
		strings.Contains(string(unit), "/usr/local/bin") {
		t.Errorf("the packaged unit does not run /usr/bin/gatewayd:\n%s", unit)
	}
	cfg, err := os.ReadFile(filepath.Join(root, configPath))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "\nstate_dir: /var/lib/gatewayd\n") {
		t.Error("the packaged config does not set state_dir: /var/lib/gatewayd")
	}
}

// rpm header tags go-rpmutils has no name for.
const (
	tagRecommendName = 5046
	tagSuggestName   = 5049
)

func TestRPM(t *testing.T) {
	_, rpmPath := buildPackages(t, "v1.2.3", "arm64", fakeBinary(t))
	f, err := os.Open(rpmPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := rpmutils.ReadRpm(f)
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header
	nevra, err := h.GetNEVRA()
	if err != nil {
		t.Fatal(err)
	}
	if nevra.Name != "gatewayd" || nevra.Version != "1.2.3" || nevra.Release != "1" || nevra.Arch != "aarch64" {
		t.Errorf("NEVRA %+v", nevra)
	}
	fis, err := h.GetFiles()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]rpmutils.FileInfo{}
	for _, fi := range fis {
		got[fi.Name()] = fi
	}
	want := map[string][3]string{rpmUnitPath: {"0644", "root", "root"}}
	for p, w := range wantFiles {
		want[p] = w
	}
	for p, w := range want {
		fi, ok := got[p]
		if !ok {
			t.Errorf("no %s in the rpm", p)
			continue
		}
		if g := [3]string{fmt.Sprintf("%04o", fi.Mode()&0o7777), fi.UserName(), fi.GroupName()}; g != w {
			t.Errorf("%s: %v, want %v", p, g, w)
		}
		conf := fi.Flags()&rpmutils.RPMFILE_CONFIG != 0
		noreplace := fi.Flags()&rpmutils.RPMFILE_NOREPLACE != 0
		wantConf := p == configPath || p == envPath
		if conf != wantConf || noreplace != wantConf {
			t.Errorf("%s: %%config %v, noreplace %v; want %v", p, conf, noreplace, wantConf)
		}
	}
	if _, ok := got[debUnitPath]; ok {
		t.Errorf("the rpm has %s (rpm distributions keep units in /usr/lib)", debUnitPath)
	}
	for tag, name := range map[int]string{rpmutils.PREIN: "%pre", rpmutils.POSTIN: "%post", rpmutils.PREUN: "%preun", rpmutils.POSTUN: "%postun"} {
		s, err := h.GetStrings(tag)
		if err != nil || len(s) == 0 || !strings.HasPrefix(s[0], "#!/bin/sh") {
			t.Errorf("%s: %q, %v", name, s, err)
		}
	}
	for tag, want := range map[int]string{tagRecommendName: "nodejs", tagSuggestName: "npm"} {
		if s, err := h.GetStrings(tag); err != nil || len(s) != 1 || s[0] != want {
			t.Errorf("tag %d: %q, %v; want %q", tag, s, err, want)
		}
	}
	if s, err := h.GetStrings(rpmutils.DESCRIPTION); err != nil || len(s) == 0 || !strings.Contains(s[0], "npm install -g @openai/codex@") {
		t.Errorf("description %q, %v", s, err)
	}
	if s, err := h.GetStrings(rpmutils.URL); err != nil || len(s) == 0 || s[0] != homepage {
		t.Errorf("URL %q, %v", s, err)
	}
}

// systemd-analyze verify accepts the packaged unit (ExecStart pointed at a
// binary that exists here).
func TestPackagedUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	stage := t.TempDir()
	contents, _, err := stageFiles(repoRoot, stage, fakeBinary(t), "0.0.0")
	if err != nil {
		t.Fatal(err)
	}
	var src string
	for _, c := range contents {
		if c.Destination == debUnitPath {
			src = c.Source
		}
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "gatewayd.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(b), binPath, "/bin/true")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sa, "verify", unit).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The maintainer scripts are POSIX sh (dash on Debian): sh -n parses them.
func TestScriptsParse(t *testing.T) {
	for _, s := range []string{"preinst", "postinst", "prerm", "postrm"} {
		p := filepath.Join(repoRoot, "deploy", "package", s)
		if out, err := exec.Command("sh", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("sh -n %s: %v\n%s", s, err, out)
		}
		if sc, err := exec.LookPath("shellcheck"); err == nil {
			if out, err := exec.Command(sc, "-s", "sh", p).CombinedOutput(); err != nil {
				t.Errorf("shellcheck %s: %v\n%s", s, err, out)
			}
		}
	}
}

// fakeCodexDir is a codex vendor directory as npm's
// @openai/codex-linux-<arch> package lays it out.
func fakeCodexDir(t *testing.T, version, target string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"codex-package.json": fmt.Sprintf(`{"layoutVersion":1,"version":%q,"target":%q,"variant":"codex",`+
			`"entrypoint":"bin/codex","resourcesDir":"codex-resources","pathDir":"codex-path"}`, version, target),
		"bin/codex":              "#!/bin/sh\necho codex-cli " + version + "\n",
		"codex-path/rg":          "#!/bin/sh\n",
		"codex-resources/bwrap":  "#!/bin/sh\n",
		"codex-resources/README": "resources\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(body, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// BUNDLE_CODEX=1: the package holds the pinned codex's vendor directory
// whole at /usr/lib/gatewayd/codex (bin/codex executable, root-owned), in
// a file named gatewayd-with-codex_…, without node or npm to recommend; a
// codex of another release or architecture is refused.
func TestBundledCodex(t *testing.T) {
	dpkgDeb, err := exec.LookPath("dpkg-deb")
	if err != nil {
		t.Skip("dpkg-deb not installed")
	}
	pinned, err := pinnedCodex(filepath.Join(repoRoot, "tools", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	bin := fakeBinary(t)
	for _, bad := range []struct{ version, target, arch string }{
		{"0.1.0", "x86_64-unknown-linux-musl", "amd64"},
		{pinned, "x86_64-unknown-linux-musl", "arm64"},
	} {
		o := options{root: repoRoot, version: "v1.2.3", arch: bad.arch, binary: bin, out: t.TempDir(),
			codex: fakeCodexDir(t, bad.version, bad.target)}
		if _, err := build(o); err == nil {
			t.Errorf("codex %s for %s bundled into an %s package", bad.version, bad.target, bad.arch)
		}
	}
	if _, err := build(options{root: repoRoot, version: "v1.2.3", arch: "amd64", binary: bin, out: t.TempDir(),
		codex: t.TempDir()}); err == nil {
		t.Error("a directory without codex-package.json was bundled")
	}

	paths, err := build(options{root: repoRoot, version: "v1.2.3", arch: "amd64", binary: bin, out: t.TempDir(),
		codex: fakeCodexDir(t, pinned, "x86_64-unknown-linux-musl")})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || filepath.Base(paths[0]) != "gatewayd-with-codex_1.2.3_amd64.deb" ||
		filepath.Base(paths[1]) != "gatewayd-with-codex-1.2.3-1.x86_64.rpm" {
		t.Fatalf("built %q", paths)
	}
	out, err := exec.Command(dpkgDeb, "--contents", paths[0]).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		got[strings.TrimSuffix(strings.TrimPrefix(f[5], "."), "/")] = f[0] + " " + f[1]
	}
	for p, w := range map[string]string{
		bundledCodexDir + "/bin/codex":              "-rwxr-xr-x root/root",
		bundledCodexDir + "/codex-path/rg":          "-rwxr-xr-x root/root",
		bundledCodexDir + "/codex-package.json":     "-rw-r--r-- root/root",
		bundledCodexDir + "/codex-resources/README": "-rw-r--r-- root/root",
		binPath: "-rwxr-xr-x root/root",
	} {
		if got[p] != w {
			t.Errorf("%s: %q, want %q", p, got[p], w)
		}
	}
	info, err := exec.Command(dpkgDeb, "-I", paths[0]).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(info), "Package: gatewayd\n") || !strings.Contains(string(info), "It bundles codex "+pinned) ||
		strings.Contains(string(info), "Recommends:") {
		t.Errorf("dpkg-deb -I of the bundle:\n%s", info)
	}
}
