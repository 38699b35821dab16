package codex

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// LaneProfile is the codex permissions profile that confines a lane's
// commands and file tools (codex.isolation: lanes). It is one profile for
// every lane: it grants the system paths a toolchain reads (":minimal"),
// the codex binary's own directory (the sandbox re-executes codex from
// there) and the thread's workspace roots, which each lane names in its
// thread/start, thread/resume and turn/start (runtimeWorkspaceRoots).
// Nothing else exists inside the sandbox: not the state directory, not
// CODEX_HOME, not the config directory, not another lane's directories.
// codex enforces it with its bundled bubblewrap on Linux.
const LaneProfile = "gatewayd_lane"

// IsolationArgs are the app-server's "-c" overrides that define
// LaneProfile and make it the default, so a thread that somehow names no
// profile is confined too. codexDir is the directory the codex binary runs
// from; write says whether the workspace roots are writable (sandbox
// workspace-write) or only readable (read-only). deny lists what no lane
// may see even where the profile grants an ancestor: ":minimal" grants the
// system paths, /etc among them, where the systemd layout keeps the config
// and environment files. Only the paths under a granted one are denied:
// nothing else exists in the sandbox, and bubblewrap cannot mask a path
// whose parent it has not mounted (the command then fails to start).
// Network stays off, as codex's workspace-write sandbox has it by default.
//
// Every root's .git is read-only, whatever the sandbox: a lane's worktree
// has its git directory there, and the daemon runs git on it, so a lane
// that could write it could plant config or hooks for the daemon's git to
// run. readOnly are further paths every lane may read and none
// may write: the object directories of the projects' repositories, which
// each lane's repository borrows through git's alternates.
func IsolationArgs(codexDir string, write bool, deny, readOnly []string) []string {
	access := "read"
	if write {
		access = "write"
	}
	var fs strings.Builder
	fmt.Fprintf(&fs, `{":minimal"="read", ":workspace_roots"={"."=%q, ".git"="read"}, %s="read"`,
		access, strconv.Quote(codexDir))
	for _, p := range readOnly {
		if p = filepath.Clean(p); filepath.IsAbs(p) {
			fmt.Fprintf(&fs, `, %s="read"`, strconv.Quote(p))
		}
	}
	granted := append([]string{codexDir}, minimalReadRoots...)
	for _, p := range deny {
		if p = filepath.Clean(p); underAny(p, granted) {
			fmt.Fprintf(&fs, `, %s="deny"`, strconv.Quote(p))
		}
	}
	fs.WriteString("}")
	return []string{
		"-c", "permissions." + LaneProfile + ".filesystem=" + fs.String(),
		"-c", "permissions." + LaneProfile + ".network.enabled=false",
		"-c", "default_permissions=" + strconv.Quote(LaneProfile),
		// Under a permissions profile every file codex reads for a thread
		// is a sandboxed helper process (0.1-2 s each on a busy machine).
		// AGENTS.md discovery made ~17 of them per thread/start: it is off,
		// and the confinement sends the lane's AGENTS.md (ProjectDoc).
		"-c", "project_doc_max_bytes=0",
		// The project root is then the working directory: the skills
		// lookup stops walking up for a .git marker, one helper each step
		// (the directories above a lane's root are not in its sandbox).
		"-c", "project_root_markers=[]",
	}
}

// minimalReadRoots are the paths codex's ":minimal" grants on Linux
// (LINUX_PLATFORM_DEFAULT_READ_ROOTS in codex-rs/linux-sandbox).
var minimalReadRoots = []string{"/bin", "/sbin", "/usr", "/etc", "/lib", "/lib64", "/nix/store", "/run/current-system/sw"}

// underAny reports whether path lies strictly inside one of roots.
func underAny(path string, roots []string) bool {
	for _, r := range roots {
		if rel, err := filepath.Rel(r, path); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// CodexDir is the directory IsolationArgs must grant for the native codex
// binary at path, symlinks resolved: the vendor directory above its bin/
// (it holds codex's helpers too), else the binary's own directory.
func CodexDir(binary string) string {
	// The sandbox mounts the real directory: a path through a symlink
	// (a linked node_modules, say) would grant the link, not the binary.
	if real, err := filepath.EvalSymlinks(binary); err == nil {
		binary = real
	}
	dir := filepath.Dir(binary)
	if filepath.Base(dir) == "bin" {
		return filepath.Dir(dir)
	}
	return dir
}

// Confinement is what a lane's thread and turns send to stay inside its
// own directories: the profile, the workspace roots (the working directory
// first) and the environment its commands get (TMPDIR and HOME inside the
// roots, since /tmp and the daemon's home do not exist in the sandbox).
type Confinement struct {
	Profile string
	Roots   []string
	Env     map[string]string
}

func (c Confinement) set() bool { return c.Profile != "" }

// threadParams adds the confinement to thread/start or thread/resume
// params: a named profile cannot be combined with a sandbox mode.
func (c Confinement) threadParams(p map[string]any) {
	if !c.set() {
		return
	}
	delete(p, "sandbox")
	p["permissions"] = c.Profile
	p["runtimeWorkspaceRoots"] = c.Roots
	// Read at every thread/start, thread/resume and fork: an edited
	// AGENTS.md reaches the lane's next new thread. codex 0.169 keeps the
	// developer instructions a thread started with and ignores a resume's
	// (seen), so a live or resumed thread keeps the text it started with,
	// where codex's own discovery would refresh it at the next turn. Only
	// a working directory that is one of the lane's roots is read: the
	// sandbox showed codex no other.
	if cwd, _ := p["cwd"].(string); cwd != "" && slices.Contains(c.Roots, cwd) {
		if doc := ProjectDoc(cwd, ProjectDocMaxBytes); doc != "" {
			p["developerInstructions"] = joinInstructions(p["developerInstructions"], doc)
		}
	}
	if len(c.Env) > 0 {
		p["config"] = map[string]any{"shell_environment_policy": map[string]any{"set": c.Env}}
	}
}

// joinInstructions appends doc to the thread's developer instructions.
func joinInstructions(prev any, doc string) string {
	if s, _ := prev.(string); s != "" {
		return s + "\n\n" + doc
	}
	return doc
}

// turnParams adds the confinement to turn/start params: a turn may move
// the thread's cwd (a /project switch), and its roots move with it.
func (c Confinement) turnParams(p map[string]any) {
	if !c.set() {
		return
	}
	p["permissions"] = c.Profile
	p["runtimeWorkspaceRoots"] = c.Roots
}

// ExecResult is the outcome of Exec.
type ExecResult struct {
	ExitCode       int
	Stdout, Stderr string
}

// Exec runs argv in dir under the permissions profile (command/exec), the
// way a confined thread's command would run, without a model or a thread:
// gatewayd doctor probes the isolation with it.
func (c *Client) Exec(ctx context.Context, argv []string, dir, profile string) (ExecResult, error) {
	var out struct {
		ExitCode int    `json:"exitCode"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	params := map[string]any{"command": argv, "cwd": dir}
	if profile != "" {
		params["permissionProfile"] = profile
	}
	if _, err := c.callLive(ctx, "command/exec", params, &out); err != nil {
		return ExecResult{}, fmt.Errorf("codex: command/exec %s: %w", strings.Join(argv, " "), err)
	}
	return ExecResult{ExitCode: out.ExitCode, Stdout: out.Stdout, Stderr: out.Stderr}, nil
}
