// Package diff is /diff: the lane's changes since its worktree began,
// committed on its branch or not, new files included.
package diff

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

// The message lists each file's lines added and removed; a short diff
// follows inline, a long one goes as a .diff file (where the platform
// takes files).

const (
	// listMax is how many files the message lists by name.
	listMax = 30
	// inlineMax is the longest diff shown in the message itself.
	inlineMax = 1500
	fileName  = "changes.diff"
)

// Store is the part of the store /diff uses.
type Store interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
}

var _ Store = (*store.Store)(nil)

// Diff is the /diff command.
type Diff struct {
	st   Store
	host ext.Host
	log  *zap.Logger
	// changes reads a worktree's changes (worktree.Diff; tests replace it).
	changes func(ctx context.Context, tree worktree.Tree) (worktree.Changes, error)
}

// New is /diff over st.
func New(st Store) *Diff { return &Diff{st: st, changes: worktree.Diff} }

// Name is the feature's name.
func (d *Diff) Name() string { return "diff" }

// Register adds /diff.
func (d *Diff) Register(h ext.Host) error {
	d.host, d.log = h, h.Logger()
	h.Command(ext.Command{Name: "diff", Description: "Show this conversation's changes in its git worktree", Menu: true,
		Run: func(ctx context.Context, c ext.Call) bool {
			d.command(ctx, c.Lane, c.MsgID)
			return true
		}})
	return nil
}

// command answers /diff at once: it reads the worktree, so it needs no
// place in the lane's queue, and shows a running turn's changes so far.
func (d *Diff) command(ctx context.Context, l ext.Lane, msgID string) {
	addr := l.Address()
	tree, text, ok := d.tree(ctx, l)
	if !ok {
		d.host.Notify(ctx, addr, msgID, text)
		return
	}
	ch, err := d.changes(ctx, tree)
	if err != nil {
		d.log.Warn("diff.failed", zap.String("lane", l.Key()), zap.Error(err))
		d.host.Notify(ctx, addr, msgID, "Could not read this conversation's changes: "+ext.BriefError(err))
		return
	}
	if len(ch.Files) == 0 {
		d.host.Notify(ctx, addr, msgID, fmt.Sprintf("No changes on branch %s since it began at %s.", tree.Branch(), short(tree.Base)))
		return
	}
	summary := summary(tree, ch)
	if len(ch.Patch) <= inlineMax {
		d.host.Notify(ctx, addr, msgID, summary+"\n\n```diff\n"+ch.Patch+"\n```")
		return
	}
	// The file goes first: the answer to the command comes last, so an
	// API request that waits for it holds the file too.
	f := ext.File{Name: fileName, MIME: "text/x-diff", Caption: "The whole diff of this conversation's changes.", Data: []byte(ch.Patch)}
	if err := d.host.SendFile(ctx, addr, msgID, f); err == nil {
		attached := "The whole diff is attached: " + fileName + "."
		if ch.Truncated {
			attached = fmt.Sprintf("The diff is attached as %s, cut at %d MiB; `git diff %s` in %s prints it all.",
				fileName, len(ch.Patch)>>20, short(tree.Base), tree.Dir)
		}
		d.host.Notify(ctx, addr, msgID, summary+"\n\n"+attached)
		return
	}
	d.host.Notify(ctx, addr, msgID, summary+"\n\nThe whole diff is too long to show here; `git diff "+short(tree.Base)+"` in "+tree.Dir+" prints it.")
}

// tree is the lane's worktree, or the words saying why it has none.
func (d *Diff) tree(ctx context.Context, l ext.Lane) (worktree.Tree, string, bool) {
	sl, err := d.st.Lane(ctx, l.Key())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return worktree.Tree{}, "Could not read this conversation (storage error). Please try again.", false
	}
	return l.Worktree(ctx, sl)
}

// summary is the message's list of files.
func summary(tree worktree.Tree, ch worktree.Changes) string {
	added, deleted := ch.Totals()
	var b strings.Builder
	fmt.Fprintf(&b, "Changes on branch %s since %s: %d %s, +%d −%d", tree.Branch(), short(tree.Base),
		len(ch.Files), plural(len(ch.Files), "file", "files"), added, deleted)
	for i, f := range ch.Files {
		if i == listMax {
			fmt.Fprintf(&b, "\n… and %d more", len(ch.Files)-listMax)
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

// short is a commit id as people quote it.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
