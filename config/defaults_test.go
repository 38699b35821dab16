package config

import "testing"

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
