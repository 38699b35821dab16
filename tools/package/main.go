// Command package builds gatewayd's Debian and RPM packages with nfpm
// (as a library, pinned in go.mod): `make package` runs it once per
// architecture on a binary built with CGO_ENABLED=0.
//
//	go run ./tools/package -arch amd64 -binary gatewayd -out dist [-version 1.2.3]
//
// A package holds /usr/bin/gatewayd, the systemd unit (deploy/systemd, with
// ExecStart pointed at /usr/bin), /etc/gatewayd/gatewayd.yaml (the sample,
// with state_dir set) and /etc/gatewayd/env as configuration kept on
// upgrade, the state directory /var/lib/gatewayd, and the maintainer
// scripts of deploy/package (the user gatewayd, the service's start).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the "deb" packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the "rpm" packager
)

// The package's metadata. There is no LICENSE file in the repository yet:
// licenseName says so rather than guessing one.
const (
	packageName = "gatewayd"
	maintainer  = "gatewayd maintainers <maintainers@gatewayd.invalid>"
	homepage    = "https://github.com/gatewayd/gatewayd"
	licenseName = "unspecified"
)

// Installed paths.
const (
	binPath     = "/usr/bin/gatewayd"
	debUnitPath = "/lib/systemd/system/gatewayd.service"
	rpmUnitPath = "/usr/lib/systemd/system/gatewayd.service"
	configDir   = "/etc/gatewayd"
	configPath  = "/etc/gatewayd/gatewayd.yaml"
	envPath     = "/etc/gatewayd/env"
	stateDir    = "/var/lib/gatewayd"
	serviceUser = "gatewayd"
	// bundledCodexDir holds the codex of a package built with -codex:
	// the npm package's vendor directory for the architecture, whole
	// (codex-package.json, bin/codex, codex-path/, codex-resources/), so
	// bin/codex is runtime/codex's BundledCommand.
	bundledCodexDir = "/usr/lib/gatewayd/codex"
)

// formats are the packagers run, in this order.
var formats = []string{"deb", "rpm"}

type options struct {
	root    string // the repository: deploy/ and tools/package.json
	version string // package version; empty: from git describe
	arch    string // GOARCH of the binary: amd64 or arm64
	binary  string // the gatewayd binary to package
	out     string // directory the packages are written to
	// codex is the codex vendor directory to bundle (npm's
	// vendor/<target> of @openai/codex@<pinned>-linux-<arch>); "" bundles
	// none and names the install command instead.
	codex string
	// codexCache, when codex is "", is where the pinned codex for arch is
	// fetched to (npm pack) and bundled from; "" bundles none.
	codexCache string
}

func main() {
	var o options
	flag.StringVar(&o.root, "root", ".", "the repository's root directory")
	flag.StringVar(&o.version, "version", "", "package version (a tag like v1.2.3, git describe output or a commit); empty: git describe --tags --always --dirty")
	flag.StringVar(&o.arch, "arch", "amd64", "architecture of the binary (GOARCH): amd64 or arm64")
	flag.StringVar(&o.binary, "binary", "", "the gatewayd binary (built with CGO_ENABLED=0 for -arch)")
	flag.StringVar(&o.out, "out", "dist", "directory for the packages")
	flag.StringVar(&o.codex, "codex", "", "bundle this codex vendor directory (vendor/<target> of @openai/codex@<pinned>-linux-<arch>) at "+bundledCodexDir)
	flag.StringVar(&o.codexCache, "bundle-codex", "", "fetch the pinned codex for -arch into this cache directory (npm pack) and bundle it")
	flag.Parse()
	if flag.NArg() > 0 || o.binary == "" {
		fmt.Fprintln(os.Stderr, "usage: package -binary FILE [-arch amd64|arm64] [-version V] [-out DIR] [-root DIR]")
		os.Exit(2)
	}
	paths, err := build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "package:", err)
		os.Exit(1)
	}
	for _, p := range paths {
		fmt.Println(p)
	}
}

// build writes one package per format into o.out and returns their paths.
func build(o options) ([]string, error) {
	switch o.arch {
	case "amd64", "arm64":
	default:
		return nil, fmt.Errorf("-arch %q: want amd64 or arm64", o.arch)
	}
	if fi, err := os.Stat(o.binary); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("-binary %s is not a file", o.binary)
	}
	raw := o.version
	if raw == "" {
		var err error
		if raw, err = gitDescribe(o.root); err != nil {
			return nil, err
		}
	}
	version, err := packageVersion(raw)
	if err != nil {
		return nil, err
	}
	codexVersion, err := pinnedCodex(filepath.Join(o.root, "tools", "package.json"))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	stage, err := os.MkdirTemp("", "gatewayd-package-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	contents, scripts, err := stageFiles(o.root, stage, o.binary, codexVersion)
	if err != nil {
		return nil, err
	}
	if o.codex == "" && o.codexCache != "" {
		if o.codex, err = fetchCodex(o.codexCache, o.arch, codexVersion); err != nil {
			return nil, err
		}
	}
	if o.codex != "" {
		if err := checkBundledCodex(o.codex, o.arch, codexVersion); err != nil {
			return nil, err
		}
		contents = append(contents, &files.Content{Source: o.codex, Destination: bundledCodexDir, Type: files.TypeTree,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root"}})
	}
	bundled := o.codex != ""

	var paths []string
	for _, format := range formats {
		info := packageInfo(version, o.arch, codexVersion, bundled, contents, scripts)
		pkg, err := nfpm.Get(format)
		if err != nil {
			return nil, err
		}
		// ConventionalFileName rewrites info's architecture for its format.
		name := pkg.ConventionalFileName(packageInfo(version, o.arch, codexVersion, bundled, contents, scripts))
		if bundled {
			// The same package (it replaces the other on install), in a
			// file that says what it holds.
			name = packageName + "-with-codex" + strings.TrimPrefix(name, packageName)
		}
		path := filepath.Join(o.out, name)
		if err := writePackage(pkg, info, path); err != nil {
			return nil, fmt.Errorf("%s: %w", format, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func writePackage(pkg nfpm.Packager, info *nfpm.Info, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	info.Target = path
	if err := pkg.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// packageInfo is a fresh Info for one packager (the packagers change the
// one they are given).
func packageInfo(version, arch, codexVersion string, bundled bool, contents files.Contents, scripts nfpm.Scripts) *nfpm.Info {
	cs := make(files.Contents, len(contents))
	for i, c := range contents {
		cc := *c
		if c.FileInfo != nil {
			fi := *c.FileInfo
			cc.FileInfo = &fi
		}
		cs[i] = &cc
	}
	info := &nfpm.Info{
		Name:        packageName,
		Arch:        arch,
		Platform:    "linux",
		Version:     version,
		Section:     "net",
		Priority:    "optional",
		Maintainer:  maintainer,
		Vendor:      "gatewayd",
		Homepage:    homepage,
		License:     licenseName,
		Description: description(codexVersion, bundled),
		Overridables: nfpm.Overridables{
			Recommends: []string{"nodejs"},
			Suggests:   []string{"npm"},
			Contents:   cs,
			Scripts:    scripts,
			RPM: nfpm.RPM{
				Summary: "Codex agent gateway for Telegram, Discord and a local API",
				Group:   "System Environment/Daemons",
			},
		},
	}
	if bundled {
		// The native codex needs neither node nor npm.
		info.Recommends, info.Suggests = nil, nil
	}
	return nfpm.WithDefaults(info)
}

func description(codexVersion string, bundled bool) string {
	d := "Codex agent gateway for Telegram, Discord and a local API\n" +
		"gatewayd connects chat platforms and a local HTTP API to the Codex\n" +
		"app-server, with conversations that survive restarts. It runs as the\n" +
		"systemd service gatewayd under the user gatewayd.\n"
	if bundled {
		return d + "It bundles codex " + codexVersion + ", the release it was verified against,\n" +
			"at " + bundledCodexDir + " (codex.command: codex runs it)."
	}
	return d + "It needs the codex CLI, verified against codex " + codexVersion + ":\n" +
		"npm install -g @openai/codex@" + codexVersion
}

// bundleTargets are the codex targets per architecture: the npm package
// @openai/codex@<version>-linux-<npm> and its vendor/<triple> directory.
var bundleTargets = map[string]struct{ npm, triple string }{
	"amd64": {"x64", "x86_64-unknown-linux-musl"},
	"arm64": {"arm64", "aarch64-unknown-linux-musl"},
}

// fetchCodex returns the vendor directory of codex version for arch under
// cache, fetching it from the npm registry (npm pack, about 100 MB) the
// first time.
func fetchCodex(cache, arch, version string) (string, error) {
	t := bundleTargets[arch]
	dir := filepath.Join(cache, version+"-linux-"+t.npm)
	vendor := filepath.Join(dir, "package", "vendor", t.triple)
	if _, err := os.Stat(filepath.Join(vendor, "codex-package.json")); err == nil {
		return vendor, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	spec := "@openai/codex@" + version + "-linux-" + t.npm
	pack := exec.Command("npm", "pack", "--silent", spec)
	pack.Dir = dir
	out, err := pack.Output()
	if err != nil {
		return "", fmt.Errorf("npm pack %s: %w", spec, err)
	}
	tgz := strings.TrimSpace(string(out))
	untar := exec.Command("tar", "xzf", tgz)
	untar.Dir = dir
	if out, err := untar.CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpack %s: %v: %s", tgz, err, out)
	}
	return vendor, os.Remove(filepath.Join(dir, tgz))
}

// checkBundledCodex refuses a codex directory that is not the pinned
// release for arch: a package must not bundle a codex gatewayd was not
// verified against, nor one that cannot run on the machine it installs on.
func checkBundledCodex(dir, arch, pinned string) error {
	b, err := os.ReadFile(filepath.Join(dir, "codex-package.json"))
	if err != nil {
		return fmt.Errorf("-codex %s: not a codex vendor directory: %w", dir, err)
	}
	var meta struct {
		Version, Target, Entrypoint string
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return fmt.Errorf("-codex %s: codex-package.json: %w", dir, err)
	}
	switch {
	case meta.Version != pinned:
		return fmt.Errorf("-codex %s is codex %q; tools/package.json pins %s", dir, meta.Version, pinned)
	case meta.Target != bundleTargets[arch].triple:
		return fmt.Errorf("-codex %s is for %q; -arch %s needs %s", dir, meta.Target, arch, bundleTargets[arch].triple)
	case meta.Entrypoint != "bin/codex":
		return fmt.Errorf("-codex %s: entrypoint %q, want bin/codex", dir, meta.Entrypoint)
	}
	fi, err := os.Stat(filepath.Join(dir, "bin", "codex"))
	if err != nil {
		return fmt.Errorf("-codex %s: %w", dir, err)
	}
	if fi.Mode()&0o111 == 0 {
		return fmt.Errorf("-codex %s: bin/codex is not executable", dir)
	}
	return nil
}

// stageFiles writes the files the package changes from the repository's
// (the unit, the config, the scripts) into stage and lists the contents.
func stageFiles(root, stage, binary, codexVersion string) (files.Contents, nfpm.Scripts, error) {
	unit, err := os.ReadFile(filepath.Join(root, "deploy", "systemd", "gatewayd.service"))
	if err != nil {
		return nil, nfpm.Scripts{}, err
	}
	unitText := strings.ReplaceAll(string(unit), "/usr/local/bin/gatewayd", binPath)
	if !strings.Contains(unitText, "\nExecStart="+binPath+" ") {
		return nil, nfpm.Scripts{}, fmt.Errorf("deploy/systemd/gatewayd.service: no ExecStart=%s after the substitution", binPath)
	}
	cfg, err := os.ReadFile(filepath.Join(root, "deploy", "gatewayd.yaml"))
	if err != nil {
		return nil, nfpm.Scripts{}, err
	}
	// The packaged config names the state directory, so the commands an
	// operator runs outside systemd (doctor, sessions) use the service's.
	const stateLine = "\n# state_dir: " + stateDir + "\n"
	if !strings.Contains(string(cfg), stateLine) {
		return nil, nfpm.Scripts{}, fmt.Errorf("deploy/gatewayd.yaml: no %q line to set", strings.TrimSpace(stateLine))
	}
	cfgText := strings.Replace(string(cfg), stateLine, "\nstate_dir: "+stateDir+"\n", 1)

	staged := map[string]string{"gatewayd.service": unitText, "gatewayd.yaml": cfgText}
	var scripts nfpm.Scripts
	for _, s := range []struct {
		name string
		dst  *string
	}{{"preinst", &scripts.PreInstall}, {"postinst", &scripts.PostInstall}, {"prerm", &scripts.PreRemove}, {"postrm", &scripts.PostRemove}} {
		b, err := os.ReadFile(filepath.Join(root, "deploy", "package", s.name))
		if err != nil {
			return nil, nfpm.Scripts{}, err
		}
		staged[s.name] = strings.ReplaceAll(string(b), "@CODEX_VERSION@", codexVersion)
		*s.dst = filepath.Join(stage, s.name)
	}
	for name, body := range staged {
		if err := os.WriteFile(filepath.Join(stage, name), []byte(body), 0o755); err != nil {
			return nil, nfpm.Scripts{}, err
		}
	}

	owned := func(mode os.FileMode, owner, group string) *files.ContentFileInfo {
		return &files.ContentFileInfo{Mode: mode, Owner: owner, Group: group}
	}
	unitPath := filepath.Join(stage, "gatewayd.service")
	contents := files.Contents{
		{Source: binary, Destination: binPath, FileInfo: owned(0o755, "root", "root")},
		{Source: unitPath, Destination: debUnitPath, Packager: "deb", FileInfo: owned(0o644, "root", "root")},
		{Source: unitPath, Destination: rpmUnitPath, Packager: "rpm", FileInfo: owned(0o644, "root", "root")},
		{Destination: configDir, Type: files.TypeDir, FileInfo: owned(0o750, "root", serviceUser)},
		{Source: filepath.Join(stage, "gatewayd.yaml"), Destination: configPath, Type: files.TypeConfigNoReplace, FileInfo: owned(0o640, "root", serviceUser)},
		{Source: filepath.Join(root, "deploy", "package", "env"), Destination: envPath, Type: files.TypeConfigNoReplace, FileInfo: owned(0o640, "root", serviceUser)},
		{Destination: stateDir, Type: files.TypeDir, FileInfo: owned(0o700, serviceUser, serviceUser)},
	}
	return contents, scripts, nil
}

// pinnedCodex reads the codex release tools/package.json pins.
func pinnedCodex(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	v := pkg.Dependencies["@openai/codex"]
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+[0-9A-Za-z.-]*$`).MatchString(v) {
		return "", fmt.Errorf("%s: @openai/codex is %q, not a pinned release", path, v)
	}
	return v, nil
}

func gitDescribe(root string) (string, error) {
	cmd := exec.Command("git", "describe", "--tags", "--always", "--dirty")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git describe (give -version): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

var (
	releaseRe  = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	describeRe = regexp.MustCompile(`^([0-9]+\.[0-9]+\.[0-9]+)-([0-9]+)-g([0-9a-f]+)$`)
	semverRe   = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+[-+~][0-9A-Za-z.~+-]+$`)
	metaRe     = regexp.MustCompile(`[^0-9A-Za-z.]+`)
)

// packageVersion turns a tag or git describe output into a version that
// sorts right in dpkg and rpm: v1.2.3 is 1.2.3, v1.2.3-4-gabc1234 (four
// commits after the tag) 1.2.3+4.gabc1234, a bare commit abc1234
// 0.0.0+abc1234; -dirty becomes .dirty in the +metadata.
func packageVersion(v string) (string, error) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if v == "" {
		return "", errors.New("empty version")
	}
	dirty := strings.HasSuffix(v, "-dirty")
	v = strings.TrimSuffix(v, "-dirty")
	var out string
	switch {
	case releaseRe.MatchString(v):
		out = v
	case describeRe.MatchString(v):
		m := describeRe.FindStringSubmatch(v)
		out = m[1] + "+" + m[2] + ".g" + m[3]
	case semverRe.MatchString(v):
		out = v // a pre-release (1.2.3-rc1) or one with metadata already
	default:
		meta := strings.Trim(metaRe.ReplaceAllString(v, "."), ".")
		if meta == "" {
			return "", fmt.Errorf("version %q has nothing usable", v)
		}
		out = "0.0.0+" + meta
	}
	if dirty {
		if strings.Contains(out, "+") {
			out += ".dirty"
		} else {
			out += "+dirty"
		}
	}
	return out, nil
}
