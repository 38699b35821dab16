package config

import (
	"os"
	"reflect"
	"testing"
)

func TestMaxConcurrentTurnsFollowsTheCPUCount(t *testing.T) {
	tests := []struct {
		name       string
		cpus, want int
	}{
		{name: "one cpu keeps the old floor", cpus: 1, want: 4},
		{name: "two cpus", cpus: 2, want: 8},
		{name: "eight cpus", cpus: 8, want: 32},
		{name: "capped", cpus: 64, want: 64},
		{name: "nonsense count", cpus: 0, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MaxConcurrentTurnsFor(tt.cpus); got != tt.want {
				t.Errorf("MaxConcurrentTurnsFor(%d) = %d, want %d", tt.cpus, got, tt.want)
			}
		})
	}
}

// Every key's default decodes, and Defaults is what Load gives for an
// empty file but for what Load derives from the machine.
func TestDefaultsDecode(t *testing.T) {
	got, err := decodeDefaults()
	if err != nil {
		t.Fatalf("a default does not decode: %v", err)
	}
	dir := isolate(t)
	want, err := Load(Options{File: writeFile(t, dir, "empty.yaml", ""), Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	want.File, want.StateDir, want.Codex.Cwd, want.Cluster.NodeID = "", "", "", ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Defaults:\n got %+v\nwant %+v", got, want)
	}
}
