package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkedLane is a store whose lane directory exists, with a victim
// directory outside it holding a secret: what a hostile lane's links aim
// at.
func linkedLane(t *testing.T) (s *Store, victim, secret string) {
	t.Helper()
	s = newTestStore(t, Limits{}, nil)
	if err := os.MkdirAll(s.LaneDir(testLane), dirMode); err != nil {
		t.Fatal(err)
	}
	victim = t.TempDir()
	secret = filepath.Join(victim, "secret.txt")
	if err := os.WriteFile(secret, []byte("SECRET"), fileMode); err != nil {
		t.Fatal(err)
	}
	return s, victim, secret
}

// TestCopyOutRefusesALinkedOutDirectory: out/ replaced with a link to a
// directory outside the lane fails the copy, and nothing is written there.
func TestCopyOutRefusesALinkedOutDirectory(t *testing.T) {
	s, victim, _ := linkedLane(t)
	mustSymlink(t, victim, s.OutDir(testLane))
	src := filepath.Join(t.TempDir(), "chart.txt")
	if err := os.WriteFile(src, []byte("chart"), fileMode); err != nil {
		t.Fatal(err)
	}
	if path, err := s.CopyOut(testLane, src, []string{filepath.Dir(src)}); err == nil {
		t.Fatalf("CopyOut through a linked out/ = %s, want an error", path)
	}
	if got := entries(t, victim); len(got) != 1 || got[0] != "secret.txt" {
		t.Errorf("the linked directory holds %q after the copy, want only secret.txt", got)
	}
}

// TestSaveRefusesALinkedMessageDirectory: a message directory made a link
// in advance (message ids are guessable) fails the save instead of
// writing the attachment through it.
func TestSaveRefusesALinkedMessageDirectory(t *testing.T) {
	s, victim, _ := linkedLane(t)
	mustSymlink(t, victim, s.MessageDir(testLane, "m1"))
	if saved, err := s.Save(context.Background(), testLane, "m1", "a.txt", strings.NewReader("attachment")); err == nil {
		t.Fatalf("Save through a linked message directory = %+v, want an error", saved)
	}
	if got := entries(t, victim); len(got) != 1 {
		t.Errorf("the linked directory holds %q after the save, want only secret.txt", got)
	}
}

// TestOpenRefusesALinkOutOfTheLane: an out copy swapped for a link to a
// file outside the lane, or reached through a linked out/, is not opened;
// the copy itself is.
func TestOpenRefusesALinkOutOfTheLane(t *testing.T) {
	s, victim, secret := linkedLane(t)
	copied := outCopy(t, s, "chart.png", 5, 0, false)
	f, err := s.Open(testLane, copied)
	if err != nil {
		t.Fatalf("Open of the copy: %v", err)
	}
	_ = f.Close()
	if err := os.Remove(copied); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, secret, copied)
	if f, err := s.Open(testLane, copied); err == nil {
		_ = f.Close()
		t.Errorf("Open of a copy swapped for a link out of the lane succeeded")
	}
	if err := os.RemoveAll(s.OutDir(testLane)); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, victim, s.OutDir(testLane))
	if f, err := s.Open(testLane, filepath.Join(s.OutDir(testLane), "secret.txt")); err == nil {
		_ = f.Close()
		t.Errorf("Open through a linked out/ succeeded")
	}
	if f, err := s.Open(testLane, secret); err == nil {
		_ = f.Close()
		t.Errorf("Open of a path outside the lane succeeded")
	}
}

// TestPruneAndRemoveNeverReachThroughLinks: pruning a lane whose message
// directory and out/ are links removes the links, not what they point at,
// and counts nothing behind them; Remove through a linked out/ removes
// nothing outside.
func TestPruneAndRemoveNeverReachThroughLinks(t *testing.T) {
	s, victim, secret := linkedLane(t)
	mustSymlink(t, victim, s.MessageDir(testLane, "m1"))
	mustSymlink(t, victim, s.OutDir(testLane))
	if err := s.Remove(testLane, filepath.Join(s.OutDir(testLane), "secret.txt")); err == nil {
		t.Errorf("Remove through a linked out/ succeeded")
	}
	if _, err := s.Prune(testLane, 0); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatalf("the file behind the links is gone: %v", err)
	}
}
