package discord_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

func TestCheckToken(t *testing.T) {
	srv := discordtest.New()
	t.Cleanup(srv.Close)
	client := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()

	bot, err := discord.CheckToken(ctx, client, srv.URL(), discordtest.Token)
	if err != nil || bot.Username == "" || bot.ID == "" {
		t.Fatalf("good token: %+v, %v", bot, err)
	}

	const wrong = "WRONG.discord.secret"
	_, err = discord.CheckToken(ctx, client, srv.URL(), wrong)
	if !errors.Is(err, discord.ErrTokenRefused) || !strings.Contains(err.Error(), srv.URL()+"/api/v9/users/@me answered 401 401: Unauthorized") {
		t.Errorf("wrong token: %v, want a refusal naming the URL", err)
	}
	if err != nil && strings.Contains(err.Error(), "WRONG") {
		t.Errorf("the token is in the error: %v", err)
	}

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	_, err = discord.CheckToken(ctx, client, down.URL, wrong)
	if err == nil || errors.Is(err, discord.ErrTokenRefused) || !strings.HasPrefix(err.Error(), down.URL+"/api/v9/users/@me: ") {
		t.Errorf("no server: %v, want a transport error", err)
	}
}
