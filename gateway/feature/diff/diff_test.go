package diff

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

type fakeStore struct{}

func (fakeStore) Lane(_ context.Context, key string) (store.Lane, error) {
	return store.Lane{SessionKey: key}, nil
}

// TestDiff: /diff shows a short diff inline, sends a long one as a file
// before the summary (or says where to read it when no file can be sent),
// and says why a lane without a worktree has none.
func TestDiff(t *testing.T) {
	addr := chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}
	tree := worktree.Tree{Base: "0123456789abcdef"}
	tree.Dir = "/w/a"
	long := strings.Repeat("+x\n", inlineMax)
	tests := []struct {
		name     string
		noTree   bool
		patch    string
		fileErr  error
		want     []string // the notices' texts, in order, by prefix or content
		wantFile bool
	}{
		{"short", false, "+one\n", nil, []string{"```diff\n+one\n"}, false},
		{"long, as a file", false, long, nil, []string{"The whole diff of this conversation's changes.", "The whole diff is attached: changes.diff."}, true},
		{"long, no file", false, long, errors.New("no files"), []string{"`git diff 0123456789ab` in /w/a prints it."}, false},
		{"no worktree", true, "", nil, []string{"This conversation has no project"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := exttest.NewHost(t)
			h.FileErr = tc.fileErr
			d := New(fakeStore{})
			d.changes = func(context.Context, worktree.Tree) (worktree.Changes, error) {
				return worktree.Changes{Files: []worktree.FileChange{{Path: "a.txt", Added: 1}}, Patch: tc.patch}, nil
			}
			h.Register(t, d)
			l := &exttest.Lane{Addr: addr, Tree: tree, TreeOK: !tc.noTree, TreeWhy: "This conversation has no project."}
			if !h.Run(context.Background(), l, "diff", "", "m1") {
				t.Fatal("/diff left its row open")
			}
			n := h.Notices()
			if len(n) != len(tc.want) {
				t.Fatalf("notices %+v, want %d", n, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(n[i].Text, w) || n[i].ReplyTo != "m1" {
					t.Errorf("notice %d %q, want it to contain %q", i, n[i].Text, w)
				}
			}
			if got := n[0].File != nil; got != tc.wantFile {
				t.Errorf("file sent %v, want %v", got, tc.wantFile)
			}
			if tc.wantFile && (n[0].File.Name != fileName || string(n[0].File.Data) != long) {
				t.Errorf("file %s of %d bytes, want the whole patch as %s", n[0].File.Name, len(n[0].File.Data), fileName)
			}
		})
	}
}
