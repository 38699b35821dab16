package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInstall installs the package built from the real binary with dpkg,
// upgrades it and purges it. It changes the machine (a user, /etc/gatewayd,
// /var/lib/gatewayd, /usr/bin/gatewayd), so it runs only as root, with dpkg,
// and with GATEWAYD_TEST_INSTALL=1; it skips where gatewayd is already
// there, and purges on the way out, also when it fails.
func TestInstall(t *testing.T) {
	requireInstallable(t, "dpkg", "dpkg-deb", "runuser", "go")

	bin := filepath.Join(t.TempDir(), "gatewayd")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=v0.0.1", "-o", bin, "./cmd/gatewayd")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	v1, _ := buildPackages(t, "v0.0.1", "amd64", bin)
	v2, _ := buildPackages(t, "v0.0.2", "amd64", bin)

	t.Cleanup(func() {
		// Put the machine back as it was, whatever happened above.
		purge := exec.Command("dpkg", "--purge", packageName)
		purge.Env = append(os.Environ(), "GATEWAYD_PURGE_STATE=1")
		if out, err := purge.CombinedOutput(); err != nil {
			t.Logf("cleanup: dpkg --purge: %v\n%s", err, out)
		}
		if _, err := user.Lookup(serviceUser); err == nil {
			exec.Command("userdel", serviceUser).Run()
		}
		if _, err := user.LookupGroup(serviceUser); err == nil {
			exec.Command("groupdel", serviceUser).Run()
		}
		os.RemoveAll(configDir)
		os.RemoveAll(stateDir)
	})

	out := dpkg(t, false, "-i", v1)
	if !strings.Contains(out, "systemctl enable --now gatewayd") {
		t.Errorf("dpkg -i does not tell the next steps:\n%s", out)
	}

	u, err := user.Lookup(serviceUser)
	if err != nil {
		t.Fatalf("no user gatewayd after the install: %v", err)
	}
	if u.HomeDir != stateDir {
		t.Errorf("gatewayd's home is %s, want %s", u.HomeDir, stateDir)
	}
	if pw, err := exec.Command("getent", "passwd", serviceUser).Output(); err != nil || !strings.HasSuffix(strings.TrimSpace(string(pw)), "/nologin") {
		t.Errorf("gatewayd's passwd entry %q (%v): want a nologin shell", pw, err)
	}
	checkInstalled(t)

	// doctor as the service user: it runs and reports its checks. It may
	// fail (codex is not logged in, or not installed here), but not badly.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	doc := exec.CommandContext(ctx, "runuser", "-u", serviceUser, "--", "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME="+stateDir,
		"GATEWAYD_CODEX_COMMAND="+fakeCodex(t), binPath, "doctor", "--config", configPath)
	docOut, err := doc.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Errorf("gatewayd doctor: %v (want exit 0 or 1)\n%s", err, docOut)
	}
	if !strings.HasPrefix(string(docOut), "✓ config") || strings.Contains(string(docOut), "goroutine ") ||
		!strings.Contains(string(docOut), stateDir) {
		t.Errorf("gatewayd doctor's report does not look like one (not ✓ config first, or no %s):\n%s", stateDir, docOut)
	}
	t.Logf("gatewayd doctor (%v):\n%s", err, docOut)

	// An edited config survives an upgrade.
	const edit = "\n# edited by TestInstall\n"
	appendFile(t, configPath, edit)
	appendFile(t, envPath, "GATEWAYD_API_TOKEN_FILE=/etc/gatewayd/api-token\n")
	if err := os.WriteFile(filepath.Join(stateDir, "keep"), []byte("state"), 0o600); err != nil {
		t.Fatal(err)
	}
	dpkg(t, false, "-i", v2)
	if got, _ := exec.Command("dpkg-query", "-W", "-f", "${Version}", packageName).Output(); string(got) != "0.0.2" {
		t.Errorf("installed version %q after the upgrade, want 0.0.2", got)
	}
	for p, want := range map[string]string{configPath: edit, envPath: "GATEWAYD_API_TOKEN_FILE="} {
		if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s lost its edit in the upgrade (%v)", p, err)
		}
	}
	checkInstalled(t)

	// remove keeps the configuration and the state; purge without
	// GATEWAYD_PURGE_STATE=1 keeps the state and the user.
	dpkg(t, false, "-r", packageName)
	for _, p := range []string{configPath, envPath, filepath.Join(stateDir, "keep")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("after dpkg -r: %v", err)
		}
	}
	if _, err := os.Stat(binPath); err == nil {
		t.Errorf("%s is still there after dpkg -r", binPath)
	}
	dpkg(t, false, "--purge", packageName)
	if _, err := os.Stat(configDir); err == nil {
		t.Errorf("%s is still there after dpkg --purge", configDir)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "keep")); err != nil {
		t.Errorf("dpkg --purge without GATEWAYD_PURGE_STATE=1 removed the state: %v", err)
	}
	if _, err := user.Lookup(serviceUser); err != nil {
		t.Errorf("dpkg --purge without GATEWAYD_PURGE_STATE=1 removed the user: %v", err)
	}

	// Again, purged with GATEWAYD_PURGE_STATE=1: the machine is as before.
	dpkg(t, false, "-i", v2)
	dpkg(t, true, "--purge", packageName)
	for _, p := range []string{configDir, stateDir, binPath, debUnitPath} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there after the purge", p)
		}
	}
	if _, err := user.Lookup(serviceUser); err == nil {
		t.Error("the user gatewayd is still there after the purge")
	}
	if _, err := user.LookupGroup(serviceUser); err == nil {
		t.Error("the group gatewayd is still there after the purge")
	}
}

// fakeCodex is a codex the service user can run: it knows its version
// and nothing else (doctor then reports the app-server failing).
func fakeCodex(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gatewayd-install-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	codex, err := pinnedCodex(filepath.Join(repoRoot, "tools", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "codex")
	script := "#!/bin/sh\ncase \"$1\" in --version) echo \"codex-cli " + codex + "\"; exit 0;; esac\necho \"fake codex: $*\" >&2\nexit 1\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// dpkg runs dpkg non-interactively, keeping changed configuration files;
// purgeState sets GATEWAYD_PURGE_STATE=1. It fails the test when dpkg does.
func dpkg(t *testing.T, purgeState bool, args ...string) string {
	t.Helper()
	cmd := exec.Command("dpkg", append([]string{"--force-confdef", "--force-confold"}, args...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if purgeState {
		cmd.Env = append(cmd.Env, "GATEWAYD_PURGE_STATE=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkInstalled checks the installed files' modes and owners.
func checkInstalled(t *testing.T) {
	t.Helper()
	want := map[string][3]string{debUnitPath: {"0644", "root", "root"}}
	for p, w := range wantFiles {
		want[p] = w
	}
	for p, w := range want {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("installed: %v", err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		owner, group := name(user.LookupId, st.Uid), name(user.LookupGroupId, st.Gid)
		if g := [3]string{fmt.Sprintf("%04o", fi.Mode().Perm()), owner, group}; g != w {
			t.Errorf("installed %s: %v, want %v", p, g, w)
		}
	}
}

func name[T any](lookup func(string) (T, error), id uint32) string {
	v, err := lookup(strconv.FormatUint(uint64(id), 10))
	if err != nil {
		return strconv.FormatUint(uint64(id), 10)
	}
	switch x := any(v).(type) {
	case *user.User:
		return x.Username
	case *user.Group:
		return x.Name
	}
	return ""
}

// TestInstallUnderSystemd runs the maintainer scripts' systemd branches:
// dpkg runs in a mount namespace whose /run has /run/systemd/system (what
// the scripts test for), with a systemctl on PATH that records its calls.
// Without a token the first install enables nothing and says what to do;
// with one it enables and starts the service; an upgrade of an enabled
// service restarts it, a remove stops it, and a purge leaves the machine
// as it was. Guarded as TestInstall is.
func TestInstallUnderSystemd(t *testing.T) {
	requireInstallable(t, "dpkg", "unshare", "mount")
	probe := exec.Command("unshare", "-m", "sh", "-c", "mount --make-rprivate / && mount -t tmpfs gatewayd-test /run")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("no mount namespace here: %v %s", err, out)
	}
	v1, _ := buildPackages(t, "v0.0.1", "amd64", fakeBinary(t))
	v2, _ := buildPackages(t, "v0.0.2", "amd64", fakeBinary(t))
	t.Cleanup(func() {
		purge := exec.Command("dpkg", "--purge", packageName)
		purge.Env = append(os.Environ(), "GATEWAYD_PURGE_STATE=1")
		if out, err := purge.CombinedOutput(); err != nil {
			t.Logf("cleanup: dpkg --purge: %v\n%s", err, out)
		}
		exec.Command("userdel", serviceUser).Run()
		exec.Command("groupdel", serviceUser).Run()
		os.RemoveAll(configDir)
		os.RemoveAll(stateDir)
	})

	stub := t.TempDir()
	calls := filepath.Join(stub, "calls")
	systemctl := "#!/bin/sh\necho \"$*\" >> " + calls + "\n" +
		"case \"$1\" in\nis-enabled) [ -f " + stub + "/enabled ] ;;\nenable) touch " + stub + "/enabled ;;\n" +
		"disable) rm -f " + stub + "/enabled ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(stub, "systemctl"), []byte(systemctl), 0o755); err != nil {
		t.Fatal(err)
	}
	// run is dpkg under "systemd"; it returns dpkg's output and the
	// systemctl calls it made.
	run := func(purgeState bool, args ...string) (string, []string) {
		t.Helper()
		os.Remove(calls)
		script := "mount --make-rprivate / && mount -t tmpfs gatewayd-test /run && mkdir -p /run/systemd/system && " +
			"exec dpkg --force-confdef --force-confold \"$@\""
		cmd := exec.Command("unshare", append([]string{"-m", "sh", "-c", script, "dpkg"}, args...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "PATH="+stub+":"+os.Getenv("PATH"))
		if purgeState {
			cmd.Env = append(cmd.Env, "GATEWAYD_PURGE_STATE=1")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("dpkg %s under systemd: %v\n%s", strings.Join(args, " "), err, out)
		}
		b, _ := os.ReadFile(calls)
		t.Logf("dpkg %s: systemctl %q", args[0], strings.Split(strings.TrimSpace(string(b)), "\n"))
		return string(out), strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	has := func(calls []string, want string) bool {
		for _, c := range calls {
			if c == want {
				return true
			}
		}
		return false
	}

	out, got := run(false, "-i", v1)
	if has(got, "enable --now gatewayd.service") || !has(got, "daemon-reload") || !strings.Contains(out, "systemctl enable --now gatewayd") {
		t.Errorf("first install without a token: systemctl %q, output:\n%s", got, out)
	}
	run(true, "--purge", packageName)

	// A token in the environment file before the install.
	if err := os.MkdirAll(configDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(envPath, []byte("GATEWAYD_API_TOKEN=install-test\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, got = run(false, "-i", v1); !has(got, "enable --now gatewayd.service") {
		t.Errorf("first install with a token: systemctl %q, want enable --now", got)
	}
	if _, got = run(false, "-i", v2); !has(got, "restart gatewayd.service") || has(got, "stop gatewayd.service") {
		t.Errorf("upgrade of the enabled service: systemctl %q, want a restart and no stop", got)
	}
	if _, got = run(false, "-r", packageName); !has(got, "stop gatewayd.service") || !has(got, "daemon-reload") {
		t.Errorf("remove: systemctl %q, want stop and daemon-reload", got)
	}
	run(true, "--purge", packageName)
	for _, p := range []string{configDir, stateDir, binPath, debUnitPath} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there after the purge", p)
		}
	}
	if _, err := user.Lookup(serviceUser); err == nil {
		t.Error("the user gatewayd is still there after the purge")
	}
}

// requireInstallable skips unless installing gatewayd here is wanted
// (GATEWAYD_TEST_INSTALL=1), possible (root, the tools) and harmless: no
// gatewayd user, group, files or package are there to be touched.
func requireInstallable(t *testing.T, tools ...string) {
	t.Helper()
	if os.Getenv("GATEWAYD_TEST_INSTALL") != "1" {
		t.Skip("GATEWAYD_TEST_INSTALL=1 not set: this test installs a package on this machine")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	if _, err := user.Lookup(serviceUser); err == nil {
		t.Skip("a user gatewayd exists already: not touching it")
	}
	if _, err := user.LookupGroup(serviceUser); err == nil {
		t.Skip("a group gatewayd exists already: not touching it")
	}
	for _, p := range []string{configDir, stateDir, binPath} {
		if _, err := os.Lstat(p); err == nil {
			t.Skipf("%s exists already: not touching it", p)
		}
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status}", packageName).Output(); err == nil && len(out) > 0 && string(out) != "not-installed" {
		t.Skipf("package gatewayd is known to dpkg (%s): not touching it", out)
	}
}
