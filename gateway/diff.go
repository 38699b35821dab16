package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

// /diff: the lane's changes since its worktree began, committed
// on its branch or not, new files included. The message lists each file's
// lines added and removed; a short diff follows inline, a long one goes as
// a .diff file (where the platform takes files).

const (
	// diffListMax is how many files the message lists by name.
	diffListMax = 30
	// diffInlineMax is the longest diff shown in the message itself.
	diffInlineMax = 1500
	diffFileName  = "changes.diff"
)

// diffs is /diff.
type diffs struct {
	st interface {
		Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	}
	wt    *worktrees
	files *files.Store // nil: a long diff is summarised only
	out   *deliverer
	log   *zap.Logger
}

func (d *diffs) register(h *host) {
	h.command("diff", func(ctx context.Context, c commandCall) bool {
		d.command(ctx, c.lane, c.msgID)
		return true
	})
}

// command answers /diff at once: it reads the worktree, so it needs no
// place in the lane's queue, and shows a running turn's changes so far.
func (d *diffs) command(ctx context.Context, l *lane, msgID string) {
	tree, text, ok := d.tree(ctx, l)
	if !ok {
		d.out.notify(ctx, l.addr, msgID, text)
		return
	}
	ch, err := worktree.Diff(ctx, tree)
	if err != nil {
		d.log.Warn("diff.failed", zap.String("lane", l.key), zap.Error(err))
		d.out.notify(ctx, l.addr, msgID, "Could not read this conversation's changes: "+briefError(err))
		return
	}
	if len(ch.Files) == 0 {
		d.out.notify(ctx, l.addr, msgID, fmt.Sprintf("No changes on branch %s since it began at %s.", tree.Branch(), short(tree.Base)))
		return
	}
	summary := diffSummary(tree, ch)
	if len(ch.Patch) <= diffInlineMax {
		d.out.notify(ctx, l.addr, msgID, summary+"\n\n```diff\n"+ch.Patch+"\n```")
		return
	}
	// The file goes first: the answer to the command comes last, so an
	// API request that waits for it holds the file too.
	if d.sendPatch(ctx, l, msgID, ch.Patch) {
		attached := "The whole diff is attached: " + diffFileName + "."
		if ch.Truncated {
			attached = fmt.Sprintf("The diff is attached as %s, cut at %d MiB; `git diff %s` in %s prints it all.",
				diffFileName, len(ch.Patch)>>20, short(tree.Base), tree.Dir)
		}
		d.out.notify(ctx, l.addr, msgID, summary+"\n\n"+attached)
		return
	}
	d.out.notify(ctx, l.addr, msgID, summary+"\n\nThe whole diff is too long to show here; `git diff "+short(tree.Base)+"` in "+tree.Dir+" prints it.")
}

// tree is the lane's worktree, or the words saying why it has none.
func (d *diffs) tree(ctx context.Context, l *lane) (worktree.Tree, string, bool) {
	sl, err := d.st.Lane(ctx, l.key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return worktree.Tree{}, "Could not read this conversation (storage error). Please try again.", false
	}
	return d.wt.explain(ctx, l, sl)
}

// diffSummary is the message's list of files.
func diffSummary(tree worktree.Tree, ch worktree.Changes) string {
	added, deleted := ch.Totals()
	var b strings.Builder
	fmt.Fprintf(&b, "Changes on branch %s since %s: %d %s, +%d −%d", tree.Branch(), short(tree.Base),
		len(ch.Files), plural(len(ch.Files), "file", "files"), added, deleted)
	for i, f := range ch.Files {
		if i == diffListMax {
			fmt.Fprintf(&b, "\n… and %d more", len(ch.Files)-diffListMax)
			break
		}
		if f.Binary {
			fmt.Fprintf(&b, "\n• %s (binary)", f.Path)
			continue
		}
		fmt.Fprintf(&b, "\n• %s +%d −%d", f.Path, f.Added, f.Deleted)
	}
	return b.String()
}

// sendPatch sends the whole diff as a file; false when there is no files
// store or the diff does not fit.
func (d *diffs) sendPatch(ctx context.Context, l *lane, msgID, patch string) bool {
	if d.files == nil || int64(len(patch)) > d.files.Limits().MaxBytes {
		return false
	}
	tmpDir, err := os.MkdirTemp("", "gatewayd-diff-")
	if err != nil {
		d.log.Warn("diff.file_failed", zap.String("lane", l.key), zap.Error(err))
		return false
	}
	defer os.RemoveAll(tmpDir)
	src := filepath.Join(tmpDir, diffFileName)
	if err := os.WriteFile(src, []byte(patch), 0o600); err != nil {
		d.log.Warn("diff.file_failed", zap.String("lane", l.key), zap.Error(err))
		return false
	}
	copied, err := d.files.CopyOut(l.key, src, []string{tmpDir})
	if err != nil {
		d.log.Warn("diff.file_failed", zap.String("lane", l.key), zap.Error(err))
		return false
	}
	defer d.files.Release(copied)
	row := noticeFor(l.addr, msgID, "The whole diff of this conversation's changes.")
	row.OutKind, row.FilePath, row.FileName, row.FileMIME, row.FileSize = store.OutboxFile, copied, diffFileName, "text/x-diff", int64(len(patch))
	if _, err := d.out.st.Enqueue(ctx, row); err != nil {
		d.log.Error("outbox.enqueue_failed", zap.String("lane", l.key), zap.Error(err))
		_ = d.files.Remove(l.key, copied)
		return false
	}
	d.out.poke()
	return true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
