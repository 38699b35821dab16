package approvals

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// Approvals never widen a lane's boundary. The lane's agent
// runs what strangers told it to, so a request to leave the sandbox, to
// reach what it blocks, or to write under a directory outside the lane's
// own is declined at once, and the lane told, unless
// codex.allow_escalation is on; then only an admin allows it, and only
// once: acceptForSession would let every later request of its kind
// through unasked.

// laneRoots are the directories each lane's latest turn was given; the
// zero value is ready.
type laneRoots struct {
	mu sync.Mutex
	of map[string][]string // session key → roots
}

func (r *laneRoots) set(key string, roots []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.of == nil {
		r.of = make(map[string][]string)
	}
	r.of[key] = roots
}

func (r *laneRoots) get(key string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.of[key]
}

// turnRoots are the directories a turn may write: the lane's confinement
// roots (codex.isolation: lanes) or, unconfined, its working directory
// (workspace-write's writable root).
func turnRoots(in *codex.TurnInput) []string {
	if len(in.Confine.Roots) > 0 {
		return slices.Clone(in.Confine.Roots)
	}
	if in.Cwd != "" {
		return []string{in.Cwd}
	}
	return nil
}

// widening says how req would widen the lane's boundary, in words for
// "it would …"; "" when it stays inside.
func (a *approvals) widening(key string, req codex.ApprovalRequest) string {
	switch {
	case req.GrantRoot != "" && !within(req.GrantRoot, a.roots.get(key)):
		return "allow writes under a directory outside this conversation's own"
	case req.ExtraPermissions:
		return "run with permissions beyond the sandbox's"
	case req.Network != "":
		return "reach the network, which the sandbox blocks"
	case req.Reason != "":
		// Codex gives a reason only for a request that leaves the
		// sandbox: the model's justification for running escalated, or
		// "command failed; retry without sandbox?" after the sandbox
		// stopped it (docs/codex-app-server.md §10.3). A plain request has none.
		return "run outside the sandbox"
	}
	return ""
}

// mayWiden refuses, for a request that widens the boundary, an accept
// from anyone but an admin, and any accept for the session. Declining it
// stays with whoever may decide.
func (a *approvals) mayWiden(p *pendingApproval, d codex.Decision, sender string, platformAdmin bool) error {
	if p.info.Escalation == "" || (d != codex.DecisionAccept && d != codex.DecisionAcceptForSession) {
		return nil
	}
	if !a.h.IsAdminOf(p.platform, sender, platformAdmin) {
		return ext.ErrAdminsOnly
	}
	if d == codex.DecisionAcceptForSession {
		return ext.ErrOnceOnly
	}
	return nil
}

// within reports whether path lies under one of roots once links are
// resolved (a link inside a root may point anywhere). A git directory is
// never within: git runs its hooks and config, outside any sandbox, for
// whoever uses the repository next.
func within(path string, roots []string) bool {
	real, ok := resolved(path)
	if !ok || slices.Contains(strings.Split(real, string(filepath.Separator)), ".git") {
		return false
	}
	for _, r := range roots {
		root, ok := resolved(r)
		if !ok {
			continue
		}
		rel, err := filepath.Rel(root, real)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// resolved is the absolute path with every link of its existing part
// resolved; what does not exist yet is appended as written (cleaned, so
// it holds no "..").
func resolved(path string) (string, bool) {
	if !filepath.IsAbs(path) {
		return "", false
	}
	path = filepath.Clean(path)
	rest := ""
	for {
		real, err := filepath.EvalSymlinks(path)
		if err == nil {
			return filepath.Join(real, rest), true
		}
		if !os.IsNotExist(err) {
			return "", false
		}
		parent := filepath.Dir(path)
		if parent == path {
			return "", false
		}
		rest = filepath.Join(filepath.Base(path), rest)
		path = parent
	}
}

// fileLines shows a file change's files, "path (kind)".
func fileLines(files []codex.FileChange) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, f.Path+" ("+f.Kind+")")
	}
	return out
}
