package cluster

import (
	"errors"
	"fmt"
	"hash/fnv"
	"testing"
)

func placeAll(t *testing.T, keys, nodes []string) map[string]string {
	t.Helper()
	got := make(map[string]string, len(keys))
	for _, k := range keys {
		n, err := Place(k, nodes)
		if err != nil {
			t.Fatalf("Place(%q, %v): %v", k, nodes, err)
		}
		got[k] = n
	}
	return got
}

func sessionKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("discord:guild-%d:thread-%d", i%97, i)
	}
	return keys
}

// A fixed expectation pins the hash: if it changes, nodes of two versions
// would disagree on where lanes go during a rolling upgrade.
func TestPlaceIsDeterministicAcrossVersions(t *testing.T) {
	nodes := []string{"node-a", "node-b", "node-c"}
	want := map[string]string{}
	for _, k := range []string{"telegram:1:2", "discord:3:4", "api:alice"} {
		n, _ := Place(k, nodes)
		want[k] = n
	}
	reversed := []string{"node-c", "node-b", "node-a"}
	for k, w := range want {
		for i := 0; i < 3; i++ {
			if got, _ := Place(k, reversed); got != w {
				t.Fatalf("Place(%q) = %q with nodes reversed, want %q", k, got, w)
			}
		}
	}
	h := fnv.New64a()
	h.Write([]byte("node-a\x00telegram:1:2"))
	if got, want := placementScore("node-a", "telegram:1:2"), mix64(h.Sum64()); got != want {
		t.Errorf("placementScore = %#x, want FNV-1a 64 of node+NUL+key mixed = %#x", got, want)
	}
	if got := placementScore("node-a", "telegram:1:2"); got != 0xf791fdca5cb49c0e {
		t.Errorf("placementScore changed: got %#x; a new hash must not ship without a migration plan", got)
	}
}

func TestPlaceAddingNodeMovesAboutAThirdOntoNewNodeOnly(t *testing.T) {
	keys := sessionKeys(10000)
	before := placeAll(t, keys, []string{"n1", "n2"})
	after := placeAll(t, keys, []string{"n1", "n2", "n3"})
	moved := 0
	for _, k := range keys {
		if before[k] == after[k] {
			continue
		}
		moved++
		if after[k] != "n3" {
			t.Fatalf("key %q moved from %s to %s, want only moves onto n3", k, before[k], after[k])
		}
	}
	frac := float64(moved) / float64(len(keys))
	if frac < 0.28 || frac > 0.39 {
		t.Errorf("moved %.3f of keys going 2→3 nodes, want 0.28–0.39", frac)
	}
}

func TestPlaceRemovingNodeMovesOnlyItsKeys(t *testing.T) {
	keys := sessionKeys(10000)
	before := placeAll(t, keys, []string{"n1", "n2", "n3"})
	after := placeAll(t, keys, []string{"n1", "n3"})
	for _, k := range keys {
		if before[k] != "n2" && before[k] != after[k] {
			t.Fatalf("key %q moved from %s to %s though its node stayed", k, before[k], after[k])
		}
		if after[k] == "n2" {
			t.Fatalf("key %q still placed on removed node n2", k)
		}
	}
}

func TestPlaceSpreadsEvenly(t *testing.T) {
	keys := sessionKeys(9000)
	counts := map[string]int{}
	for _, n := range placeAll(t, keys, []string{"n1", "n2", "n3"}) {
		counts[n]++
	}
	for n, c := range counts {
		if c < 2700 || c > 3300 {
			t.Errorf("node %s got %d of 9000 keys, want 2700–3300", n, c)
		}
	}
}

func TestPlaceWithoutNodesIsAnError(t *testing.T) {
	for _, nodes := range [][]string{nil, {}} {
		if _, err := Place("k", nodes); !errors.Is(err, ErrNoNodes) {
			t.Errorf("Place with %v: err = %v, want ErrNoNodes", nodes, err)
		}
	}
}

func BenchmarkPlace(b *testing.B) {
	for _, n := range []int{3, 30} {
		nodes := make([]string, n)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("gatewayd-%02d.example.internal", i)
		}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := Place("discord:123456789012345678:987654321098765432", nodes); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
