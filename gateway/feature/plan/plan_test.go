package plan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

type fakeStore struct {
	err  error
	mode map[string]string
}

func (s *fakeStore) SetLaneOption(_ context.Context, key string, opt store.LaneOption, v string) error {
	if s.err != nil {
		return s.err
	}
	if opt != store.OptionMode {
		return errors.New("not the mode")
	}
	s.mode[key] = v
	return nil
}

// TestPlanCommand: /plan and /plan off keep the lane's mode and say so;
// /plan TEXT keeps it and queues TEXT as a turn of who sent it; a store
// that refuses changes nothing and says so.
func TestPlanCommand(t *testing.T) {
	addr := chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}
	tests := []struct {
		name, args string
		storeErr   error
		wantMode   string
		wantNotice string
		wantTurn   string
	}{
		{"on", "", nil, codex.ModePlan, "Plan mode is on", ""},
		{"off", "OFF", nil, codex.ModeDefault, "Plan mode is off", ""},
		{"on with a prompt", " draft the API ", nil, codex.ModePlan, "", "draft the API"},
		{"store refuses", "", errors.New("disk"), "", "Could not change Plan mode", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, st := exttest.NewHost(t), &fakeStore{err: tc.storeErr, mode: map[string]string{}}
			h.Register(t, New(st))
			l := &exttest.Lane{Addr: addr}
			done := h.Run(context.Background(), l, "plan", tc.args, "m1")
			if got := st.mode[addr.SessionKey()]; got != tc.wantMode {
				t.Errorf("mode %q, want %q", got, tc.wantMode)
			}
			n, q := h.Notices(), l.Queued()
			if tc.wantTurn != "" {
				if done || len(q) != 1 || q[0].Text != tc.wantTurn || q[0].Requester != "u1" || q[0].Task != nil || len(n) != 0 {
					t.Errorf("done %v, queued %+v, notices %+v: want the prompt queued as a turn", done, q, n)
				}
				return
			}
			if !done || len(q) != 0 || len(n) != 1 || !strings.HasPrefix(n[0].Text, tc.wantNotice) || n[0].ReplyTo != "m1" {
				t.Errorf("done %v, queued %+v, notices %+v: want %q only", done, q, n, tc.wantNotice)
			}
		})
	}
}

// TestPlanInputAndStatus: a lane's chosen mode is named on its turns when
// codex named a model (collaborationMode requires one), and /status says
// when Plan mode is on.
func TestPlanInputAndStatus(t *testing.T) {
	h := exttest.NewHost(t)
	h.Register(t, New(&fakeStore{mode: map[string]string{}}))
	l := &exttest.Lane{Addr: chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}}
	ctx := context.Background()
	tests := []struct {
		name, mode, model, want string
	}{
		{"plan", codex.ModePlan, "gpt-x", codex.ModePlan},
		{"default after off", codex.ModeDefault, "gpt-x", codex.ModeDefault},
		{"never chose", "", "gpt-x", ""},
		{"no model", codex.ModePlan, "", ""},
	}
	for _, tc := range tests {
		in := codex.TurnInput{Model: tc.model}
		h.Input(ctx, l, store.Lane{Mode: tc.mode}, &in)
		if in.Mode != tc.want {
			t.Errorf("%s: turn mode %q, want %q", tc.name, in.Mode, tc.want)
		}
	}
	if got := h.Status(ctx, store.Lane{Mode: codex.ModePlan}); got != "Plan mode: on (/plan off ends it)\n" {
		t.Errorf("status %q in Plan mode", got)
	}
	if got := h.Status(ctx, store.Lane{Mode: codex.ModeDefault}); got != "" {
		t.Errorf("status %q after /plan off, want none", got)
	}
}
