package telegram_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/store"
)

const (
	childMode = "GATEWAYD_TG_CHILD_MODE" // hang-before-commit | hang-after-commit | commit
	childAPI  = "GATEWAYD_TG_CHILD_API"
	childDB   = "GATEWAYD_TG_CHILD_DB"
)

type sinkFunc func(ctx context.Context, in gateway.Inbound) error

func (f sinkFunc) Deliver(ctx context.Context, in gateway.Inbound) (bool, error) {
	return false, f(ctx, in)
}

// TestCrashChild is the child process of TestKillNineLosesNothing: the
// adapter and a real store, with a sink that reports progress on stdout and
// hangs where the parent kills it.
func TestCrashChild(t *testing.T) {
	mode := os.Getenv(childMode)
	if mode == "" {
		t.Skip("helper process for TestKillNineLosesNothing")
	}
	ctx := context.Background()
	st, err := store.Open(ctx, os.Getenv(childDB), store.Options{})
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	commit := func(ctx context.Context, in gateway.Inbound) (bool, error) {
		_, dup, err := st.RecordInbound(ctx, store.Inbound{
			Platform: in.Address.Platform, MessageID: in.MessageID, SessionKey: in.Address.SessionKey(),
			SenderID: in.SenderID, Text: in.Text, ReceivedAt: in.ReceivedAt,
		})
		return dup, err
	}
	sink := sinkFunc(func(ctx context.Context, in gateway.Inbound) error {
		if mode == "hang-before-commit" {
			fmt.Println("FETCHED", in.MessageID)
			select {} // killed here
		}
		dup, err := commit(ctx, in)
		if err != nil {
			return err
		}
		fmt.Printf("COMMITTED %s dup=%v\n", in.MessageID, dup)
		if mode == "hang-after-commit" {
			select {} // killed before the offset reaches Telegram
		}
		return nil
	})
	a, err := telegram.New(telegram.Config{
		Token: telegramtest.Token, APIURL: os.Getenv(childAPI), AllowedUsers: []int64{1001},
		Cursor: st, PollTimeout: time.Second, RetryBackoff: 20 * time.Millisecond, Logger: zap.NewNop(),
	})
	if err != nil {
		fmt.Println("ERROR", err)
		return
	}
	fmt.Println("ERROR run:", a.Run(ctx, sink))
}

func startChild(t *testing.T, mode, api, db string) *gatewaytest.Child {
	t.Helper()
	return gatewaytest.StartChild(t, "TestCrashChild", childMode+"="+mode, childAPI+"="+api, childDB+"="+db)
}

func TestKillNineLosesNothing(t *testing.T) {
	processtest.SkipWhenShort(t, "kills a child gateway with SIGKILL")
	t.Parallel() // its own fake Bot API, store and codex home
	srv := telegramtest.New(t)
	db := filepath.Join(t.TempDir(), "gatewayd.db")
	dm := models.Chat{ID: 1001, Type: models.ChatTypePrivate}
	alice := models.User{ID: 1001, FirstName: "Alice"}
	m := srv.Text(dm, alice, 0, "survive the crash", nil)
	id := fmt.Sprintf("%d:%d", dm.ID, m.ID)

	steps := []struct {
		name, mode, want string
	}{
		{name: "killed between fetch and commit", mode: "hang-before-commit", want: "FETCHED " + id},
		{name: "killed after commit, before the offset is confirmed", mode: "hang-after-commit", want: "COMMITTED " + id + " dup=false"},
		{name: "redelivery is recognised as a duplicate", mode: "commit", want: "COMMITTED " + id + " dup=true"},
	}
	for _, st := range steps {
		c := startChild(t, st.mode, srv.URL, db)
		if line := c.Expect(t, strings.Fields(st.want)[0]); line != st.want {
			t.Fatalf("%s: child printed %q, want %q", st.name, line, st.want)
		}
		if st.mode == "commit" {
			srv.WaitFor(30*time.Second, "offset confirmed", func() bool { return srv.Pending() == 0 })
			// The cursor moved on: the next message is new, not the old one.
			next := srv.Text(dm, alice, 0, "after", nil)
			want := fmt.Sprintf("COMMITTED %d:%d dup=false", dm.ID, next.ID)
			if line := c.Expect(t, "COMMITTED"); line != want {
				t.Fatalf("after recovery: %q, want %q", line, want)
			}
		} else if srv.Pending() != 1 {
			t.Fatalf("%s: pending = %d; the update must stay unconfirmed", st.name, srv.Pending())
		}
		c.Kill()
	}
}
