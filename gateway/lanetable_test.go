package gateway

import "testing"

func TestLaneTableKeepsLRUOrder(t *testing.T) {
	tab := newLaneTable()
	a, b, c := tab.get(apiAddr("a")), tab.get(apiAddr("b")), tab.get(apiAddr("c"))
	if again := tab.get(apiAddr("a")); again != a {
		t.Fatal("get created a second lane for the same address")
	}
	for i, l := range []*lane{a, b, c} {
		l.live.lastUsed = int64(i + 1)
		tab.touch(l)
	}
	tab.touch(a) // a is now the most recently used
	excess, cands := tab.overLimit(1, c)
	if excess != 2 || len(cands) != 2 || cands[0] != b || cands[1] != a {
		t.Fatalf("overLimit(1, keep c) = %d, %v; want 2 and [b a] (oldest first, c kept)", excess, keys(cands))
	}
	if old := tab.usedBefore(2); len(old) != 2 || old[0] != b || old[1] != a {
		t.Fatalf("usedBefore(2) = %v, want [b a]", keys(old))
	}
	tab.unlive(b)
	if n := tab.live(); n != 2 {
		t.Fatalf("live = %d after unlive, want 2", n)
	}
	tab.forget(b)
	if tab.lookup(b.key) != nil || !b.dead {
		t.Fatal("an idle lane with no thread was not forgotten")
	}
	tab.forget(a) // still live: kept
	if tab.lookup(a.key) != a || a.dead {
		t.Fatal("a live lane was forgotten")
	}
}

func keys(ls []*lane) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.key)
	}
	return out
}
