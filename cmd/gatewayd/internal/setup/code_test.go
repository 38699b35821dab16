package setup

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

const testCode = "K7QX2MPA"

// TestInitLearnsTheUserFromTheCode: init allows only the sender of
// `/start CODE` sent after the code was shown, by numeric id: not a
// message waiting from before (the backlog), not one dated before the
// code even with the right code, not a wrong code; and the confirmation
// defaults to no.
func TestInitLearnsTheUserFromTheCode(t *testing.T) {
	for _, c := range []struct {
		name, answer string
		want         []string
	}{
		{"confirmed", "y", []string{"4242"}},
		{"the default is no", "", []string{"77"}}, // then the ids typed in
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := telegramtest.New(t)
			private := func(id int64) models.Chat { return models.Chat{ID: id, Type: models.ChatTypePrivate} }
			say := func(from models.User, date time.Time, text string) {
				srv.Queue(&models.Update{Message: &models.Message{ID: 1, From: &from, Chat: private(from.ID),
					Date: int(date.Unix()), Text: text}})
			}
			// Waiting before init runs: the backlog, never read.
			say(models.User{ID: 999, FirstName: "Early"}, time.Now(), "/start "+testCode)

			var out, errOut bytes.Buffer
			input := "\n" + c.answer + "\n77\n" // learn: yes; allow?; the ids asked for when not allowed
			cmd := &initCmd{std: cli.Stdio{Out: &out, Err: &errOut}, in: bufio.NewReader(strings.NewReader(input)),
				http: &http.Client{Timeout: 10 * time.Second}, opts: initOptions{tgAPIURL: srv.URL},
				tgBot: telegramtest.Bot.Username, newCode: func() (string, error) { return testCode, nil }}
			st := &initState{tgToken: telegramtest.Token}
			done := make(chan error, 1)
			go func() { done <- cmd.askTelegramUsers(context.Background(), st) }()

			// The code is shown once the backlog is skipped; init then
			// polls past it.
			srv.WaitFor(10*time.Second, "the wait for the code", func() bool {
				return slices.ContainsFunc(srv.Offsets(), func(o int64) bool { return o > 0 })
			})
			say(models.User{ID: 666, FirstName: "Old"}, time.Now().Add(-2*time.Minute), "/start "+testCode)
			say(models.User{ID: 555, FirstName: "Guess"}, time.Now(), "/start AAAAAAAA")
			say(models.User{ID: 4242, FirstName: "77"}, time.Now(), "/start@"+telegramtest.Bot.Username+" "+testCode)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("askTelegramUsers: %v\n%s", err, out.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("init did not finish")
			}
			t.Logf("output:\n%s%s", out.String(), errOut.String())
			if !slices.Equal(st.tgUsers, c.want) {
				t.Errorf("allowed %q, want %q", st.tgUsers, c.want)
			}
			for _, want := range []string{"/start " + testCode, "Ignored a message from user 666 sent before the code was shown.",
				"Ignored a message from user 555: it is not /start " + testCode, "Allow 4242 (77)? [y/N] "} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q", want)
				}
			}
			if strings.Contains(out.String(), "999") {
				t.Error("the message from before init ran was read")
			}
			if n := srv.Pending(); n != 0 {
				t.Errorf("%d updates left unconfirmed: the daemon would answer them", n)
			}
		})
	}
}

func TestIsStartCode(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"/start " + testCode, true},
		{"/start@Init_Bot " + testCode, true},
		{"/start@other_bot " + testCode, false},
		{"/start  " + testCode, false},
		{"/start " + testCode + " ", false},
		{"/start " + strings.ToLower(testCode), false},
		{testCode, false},
		{"/start", false},
	} {
		if got := isStartCode(c.text, testCode, "init_bot"); got != c.want {
			t.Errorf("isStartCode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}
