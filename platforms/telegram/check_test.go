package telegram_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

func TestCheckToken(t *testing.T) {
	srv := telegramtest.New(t)
	client := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()

	bot, err := telegram.CheckToken(ctx, client, srv.URL, telegramtest.Token)
	if err != nil || bot.Username != telegramtest.Bot.Username || bot.ID != telegramtest.Bot.ID {
		t.Fatalf("good token: %+v, %v", bot, err)
	}

	const wrong = "999:WRONG-secret"
	_, err = telegram.CheckToken(ctx, client, srv.URL, wrong)
	if !errors.Is(err, telegram.ErrTokenRefused) || !strings.Contains(err.Error(), srv.URL+"/bot<token>/getMe answered 401 Unauthorized") {
		t.Errorf("wrong token: %v, want a refusal naming the URL without the token", err)
	}
	if err != nil && strings.Contains(err.Error(), "WRONG") {
		t.Errorf("the token is in the error: %v", err)
	}

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	_, err = telegram.CheckToken(ctx, client, down.URL, wrong)
	if err == nil || errors.Is(err, telegram.ErrTokenRefused) || strings.Contains(err.Error(), "WRONG") ||
		!strings.HasPrefix(err.Error(), down.URL+"/bot<token>/getMe: ") {
		t.Errorf("no server: %v, want a transport error without the token", err)
	}
}
