package cmdbuttons

import (
	"context"
	"errors"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
)

// TestPressRunsTheCommandAsTyped: a press of a command button is
// delivered again as the typed command with the press's own message id;
// a button of a command the gateway lacks runs nothing; a delivery that
// fails tells the lane.
func TestPressRunsTheCommandAsTyped(t *testing.T) {
	addr := chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}
	h := exttest.NewHost(t)
	h.Command(ext.Command{Name: "diff", Run: func(context.Context, ext.Call) bool { return true }})
	b := New()
	h.Register(t, b)
	ctx := context.Background()
	press := func(id string) chat.Inbound {
		return chat.Inbound{Address: addr, MessageID: "press-1", Callback: id}
	}

	b.pressed(ctx, press(ext.CommandButton("diff", "Diff").ID))
	got := h.Delivered()
	if len(got) != 1 || got[0].Text != "/diff" || got[0].Callback != "" || got[0].MessageID != "press-1" {
		t.Fatalf("delivered %+v, want /diff typed with the press's id", got)
	}

	b.pressed(ctx, press(ext.CommandButton("undo", "Undo").ID))
	if n := len(h.Delivered()); n != 1 {
		t.Errorf("%d deliveries after a button of a command the gateway lacks, want still 1", n)
	}
	if n := h.Notices(); len(n) != 0 {
		t.Errorf("notices %+v for an unknown command's button, want none", n)
	}

	h.Command(ext.Command{Name: "fork", Run: func(context.Context, ext.Call) bool { return true }})
	b.pressed(ctx, press(ext.CommandLineButton("fork 01a2-b", "Fork it").ID))
	if got := h.Delivered(); len(got) != 2 || got[1].Text != "/fork 01a2-b" {
		t.Errorf("delivered %+v, want /fork 01a2-b typed with its argument", got)
	}
	if name, ok := ext.CommandOfButton(ext.CommandLineButton("fork 01a2-b", "Fork it")); !ok || name != "fork" {
		t.Errorf("CommandOfButton of a line button = %q, %v; want fork", name, ok)
	}

	h.DeliverErr = errors.New("disk full")
	b.pressed(ctx, press(ext.CommandButton("diff", "Diff").ID))
	if n := h.Notices(); len(n) != 1 || n[0].Text != "Could not run /diff (storage error). Please try again." {
		t.Errorf("notices %+v, want the failure told", n)
	}
}
