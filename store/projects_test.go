package store

import (
	"context"
	"errors"
	"testing"
)

// A lane's project belongs to the lane: /new, rotation (with or without
// the thread) and a reopened database keep it.
func TestProjectSurvivesResetRotationAndReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name  string
		after func(t *testing.T, s *Store, l Lane) *Store // returns the store to read from
	}{
		{"reset", func(t *testing.T, s *Store, l Lane) *Store {
			if _, err := s.ResetLane(ctx, l.SessionKey, "/new"); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"rotate keeping the thread", func(t *testing.T, s *Store, l Lane) *Store {
			if _, err := s.RotateSession(ctx, l.SessionKey, l.Generation, "idle", true); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"rotate with a new thread", func(t *testing.T, s *Store, l Lane) *Store {
			if _, err := s.RotateSession(ctx, l.SessionKey, l.Generation, "daily", false); err != nil {
				t.Fatal(err)
			}
			return s
		}},
		{"reopen", func(t *testing.T, s *Store, l Lane) *Store {
			path := testLocation(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return openAt(t, path, Options{})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openAt(t, testDBPath(t), Options{})
			l, err := s.EnsureLane(ctx, testLaneKey("p"))
			if err != nil {
				t.Fatal(err)
			}
			if l.Project != "" {
				t.Fatalf("a new lane's project = %q, want none", l.Project)
			}
			if err := s.BindThread(ctx, l.SessionKey, l.Generation, "th-1"); err != nil {
				t.Fatal(err)
			}
			if err := s.SetProject(ctx, l.SessionKey, "site"); err != nil {
				t.Fatalf("SetProject: %v", err)
			}
			opts := map[LaneOption]string{OptionVerbose: "full", OptionModel: "gpt-x", OptionEffort: "high"}
			for opt, v := range opts {
				if err := s.SetLaneOption(ctx, l.SessionKey, opt, v); err != nil {
					t.Fatalf("SetLaneOption(%s): %v", opt, err)
				}
			}
			got, err := tc.after(t, s, l).Lane(ctx, l.SessionKey)
			if err != nil || got.Project != "site" {
				t.Errorf("project after %s = %q (%v), want site", tc.name, got.Project, err)
			}
			if got.Verbose != "full" || got.Model != "gpt-x" || got.Effort != "high" {
				t.Errorf("options after %s = verbose %q model %q effort %q, want full gpt-x high",
					tc.name, got.Verbose, got.Model, got.Effort)
			}
		})
	}
}

func TestSetProjectOnAMissingLane(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	if err := s.SetProject(context.Background(), "nobody", "site"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetProject(missing lane) = %v, want ErrNotFound", err)
	}
}

func TestSetLaneOptionRefusesMissingLaneAndUnknownOption(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	if err := s.SetLaneOption(ctx, "nobody", OptionModel, "m"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetLaneOption(missing lane) = %v, want ErrNotFound", err)
	}
	l, err := s.EnsureLane(ctx, testLaneKey("o"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetLaneOption(ctx, l.SessionKey, LaneOption("project = 'x', model"), "m"); err == nil {
		t.Fatal("SetLaneOption accepted an unknown option")
	}
}

// ForgetProject clears a stale project only if the lane still has it.
func TestForgetProject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name, stored, forget, want string
		cleared                    bool
	}{
		{"still the stale one", "gone", "gone", "", true},
		{"chosen again meanwhile", "api", "gone", "api", false},
		{"none", "", "gone", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTestStore(t)
			l := mustEnsure(t, s, "f")
			if err := s.SetProject(ctx, l.SessionKey, tc.stored); err != nil {
				t.Fatal(err)
			}
			cleared, err := s.ForgetProject(ctx, l.SessionKey, tc.forget)
			if err != nil || cleared != tc.cleared {
				t.Fatalf("ForgetProject = %v, %v; want %v", cleared, err, tc.cleared)
			}
			if got, _ := s.Lane(ctx, l.SessionKey); got.Project != tc.want {
				t.Errorf("project = %q, want %q", got.Project, tc.want)
			}
		})
	}
}
