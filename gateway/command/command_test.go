package command

import (
	"context"
	"strings"
	"testing"
)

type call struct{ n *int }

func count(_ context.Context, c call) bool { *c.n++; return true }

func newTestSet(t *testing.T) *Set[call] {
	t.Helper()
	s := NewSet[call]([]Info{{Name: "help", Description: "List commands"}, {Name: "stop", Description: "Stop"}})
	s.Handle("help", count)
	s.Handle("stop", count)
	s.Add(Info{Name: "diff", Args: "[file]", Description: "Show the diff"}, count)
	if err := s.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	return s
}

func TestParseTakesOnlyRegisteredCommands(t *testing.T) {
	s := newTestSet(t)
	for _, tc := range []struct {
		text, name, args string
		ok               bool
	}{
		{"/stop", "stop", "", true},
		{"  /DIFF@gatewayd_bot  a.go ", "diff", "a.go", true},
		{"/deploy prod", "", "", false},
		{"say /stop", "", "", false},
		{"/", "", "", false},
	} {
		name, args, ok := s.Parse(tc.text)
		if name != tc.name || args != tc.args || ok != tc.ok {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q, %v", tc.text, name, args, ok, tc.name, tc.args, tc.ok)
		}
	}
}

func TestListEndsWithHelpAndRunCallsTheHandler(t *testing.T) {
	s := newTestSet(t)
	var names []string
	for _, c := range s.List() {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "stop,diff,help" {
		t.Errorf("List = %s, want stop,diff,help", got)
	}
	if help := s.HelpText(); !strings.Contains(help, "/diff [file] — Show the diff") {
		t.Errorf("HelpText lacks the synopsis:\n%s", help)
	}
	n := 0
	if !s.Run(context.Background(), "diff", call{&n}) || n != 1 {
		t.Errorf("Run(diff) ran the handler %d times", n)
	}
	if s.Run(context.Background(), "nope", call{&n}) || n != 1 {
		t.Error("Run of an unknown command ran something")
	}
}

func TestCheckReportsEveryRefusedRegistration(t *testing.T) {
	s := NewSet[call]([]Info{{Name: "new", Description: "New"}, {Name: "help", Description: "Help"}})
	s.Handle("help", count)                                                 // "new" left without a handler
	s.Handle("ghost", count)                                                // listed nowhere
	s.Add(Info{Name: "help", Description: "again"}, count)                  // taken
	s.Add(Info{Name: "Bad-Name", Description: "x"}, count)                  // a menu refuses it
	s.Add(Info{Name: "quiet", Description: ""}, count)                      // no description
	s.Add(Info{Name: "nil", Description: "no handler"}, nil)                // no handler
	s.Add(Info{Name: "long", Description: strings.Repeat("é", 101)}, count) // over Discord's 100
	err := s.Check()
	if err == nil {
		t.Fatal("Check accepted a broken set")
	}
	for _, want := range []string{"/new has no handler", "/ghost, which is not a listed", "/help registered twice",
		`"Bad-Name" is not`, "/quiet: description of 0", "/nil has no handler", "/long: description of 101"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check error lacks %q:\n%v", want, err)
		}
	}
}
