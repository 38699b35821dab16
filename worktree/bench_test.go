package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// bigRepo is a repository of n files in 100 directories, as large as the
// issue's figure asks for (10,000 files).
func bigRepo(b *testing.B, n int) string {
	files := make(map[string]string, n)
	for i := range n {
		files[fmt.Sprintf("d%02d/f%05d.txt", i%100, i)] = fmt.Sprintf("file %d\nline two\n", i)
	}
	return newRepo(b, files)
}

// BenchmarkCreateWorktree10k is a lane's first turn on a project of 10,000
// files: `git worktree add` checking every file out.
func BenchmarkCreateWorktree10k(b *testing.B) {
	project := bigRepo(b, 10000)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		l := Lane{Project: project, Dir: filepath.Join(b.TempDir(), "wt"), Slug: fmt.Sprintf("lane-%d", i)}
		if _, err := Ensure(ctx, l); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshot10k is the cost a turn pays before it starts on a
// worktree of 10,000 files of which the last turn changed one.
func BenchmarkSnapshot10k(b *testing.B) {
	project := bigRepo(b, 10000)
	ctx := context.Background()
	e := ensure(b, laneOf(b, project, "lane"))
	b.ResetTimer()
	for i := range b.N {
		write(b, filepath.Join(e.Work, "d00", "f00000.txt"), fmt.Sprintf("edit %d\n", i))
		id, err := Snapshot(ctx, e.Tree)
		if err != nil {
			b.Fatal(err)
		}
		if err := Save(ctx, e.Tree, fmt.Sprint(i), id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRestore10k is /undo's file half on a worktree of 10,000 files
// where the undone turn edited one file and created another.
func BenchmarkRestore10k(b *testing.B) {
	project := bigRepo(b, 10000)
	ctx := context.Background()
	e := ensure(b, laneOf(b, project, "lane"))
	id, err := Snapshot(ctx, e.Tree)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		write(b, filepath.Join(e.Work, "d00", "f00000.txt"), fmt.Sprintf("edit %d\n", i))
		write(b, filepath.Join(e.Work, "new.txt"), "new\n")
		if err := Restore(ctx, e.Tree, id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshot is the git a turn pays before it starts:
// the snapshot of a worktree of 1,000, 20,000 and 100,000 files, when the
// last turn changed nothing and when it changed 10 files.
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{1000, 20000, 100000} {
		project := bigRepo(b, n)
		for _, changed := range []int{0, 10} {
			b.Run(fmt.Sprintf("files=%d/changed=%d", n, changed), func(b *testing.B) {
				ctx := context.Background()
				e := ensure(b, laneOf(b, project, fmt.Sprintf("lane-%d", changed)))
				if _, err := Snapshot(ctx, e.Tree); err != nil { // the lane's first turn
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := range b.N {
					for f := range changed {
						write(b, filepath.Join(e.Work, fmt.Sprintf("d%02d", f), fmt.Sprintf("f%05d.txt", f)), fmt.Sprintf("edit %d\n", i))
					}
					if _, err := Snapshot(ctx, e.Tree); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFirstTurnInBigProject is what a new lane's first message on a
// big project waits for its worktree: Ensure from its first
// need of the worktree to having it, with the pool off (a checkout of
// every file) and on (the pool filled beforehand, as the daemon keeps it,
// outside the timing).
func BenchmarkFirstTurnInBigProject(b *testing.B) {
	for _, n := range []int{20000, 100000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			project := bigRepo(b, n)
			for _, size := range []int{0, 1} {
				b.Run(fmt.Sprintf("pool=%d", size), func(b *testing.B) { benchFirstTurn(b, project, size) })
			}
		})
	}
}

var benchLanes atomic.Int64

func benchFirstTurn(b *testing.B, project string, size int) {
	ctx := context.Background()
	p := poolOf(project, size)
	for i := range b.N {
		b.StopTimer()
		fill(b, p, project)
		// A new lane each time, also across -count runs on one project.
		l := poolLane(b, project, fmt.Sprintf("lane-%d-%d-%d", size, i, benchLanes.Add(1)))
		b.StartTimer()
		e, err := p.Ensure(ctx, l)
		if err != nil {
			b.Fatal(err)
		}
		if e.Pooled != (size > 0) {
			b.Fatalf("Pooled = %v with a pool of %d", e.Pooled, size)
		}
		b.StopTimer()
		if err := os.RemoveAll(l.Dir); err != nil { // the disk for the next
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkForkInBigProject is /fork of a lane that changed 10 files of a
// project of 20,000, with the pool off (every file written) and on (only
// what differs from the project's HEAD written over a ready checkout).
func BenchmarkForkInBigProject(b *testing.B) {
	project := bigRepo(b, 20000)
	ctx := context.Background()
	parent := ensure(b, poolLane(b, project, "parent"))
	for f := range 10 {
		write(b, filepath.Join(parent.Work, fmt.Sprintf("d%02d", f), fmt.Sprintf("f%05d.txt", f)), "the parent's\n")
	}
	for _, size := range []int{0, 1} {
		b.Run(fmt.Sprintf("pool=%d", size), func(b *testing.B) {
			p := poolOf(project, size)
			for i := range b.N {
				b.StopTimer()
				fill(b, p, project)
				child := poolLane(b, project, fmt.Sprintf("fork-%d-%d-%d", size, i, benchLanes.Add(1)))
				b.StartTimer()
				if _, err := p.Fork(ctx, parent.Tree, child); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := os.RemoveAll(child.Dir); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
