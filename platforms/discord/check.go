package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// ErrTokenRefused is wrapped by CheckToken's error when Discord answered
// and refused the token (rather than not answering).
var ErrTokenRefused = errors.New("discord: token refused")

// BotInfo is the bot a token belongs to.
type BotInfo struct {
	ID       string
	Username string
}

// CheckToken asks Discord (apiURL, or discord.com when "") who the bot
// token is, with discordgo as the adapter calls it. Its errors name the
// URL asked: "URL answered STATUS MESSAGE" wrapping ErrTokenRefused, or
// "URL: CAUSE" when Discord did not answer. They never hold the token.
func CheckToken(ctx context.Context, client *http.Client, apiURL, token string) (BotInfo, error) {
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		return BotInfo{}, fmt.Errorf("discord: %w", err)
	}
	cfg := Config{APIURL: apiURL, HTTPClient: client}
	s.Client = httpClient(cfg)
	s.MaxRestRetries = 0
	s.ShouldRetryOnRateLimit = false
	endpoint, _ := url.Parse(discordgo.EndpointUser("@me"))
	shown := endpoint.String()
	if apiURL != "" {
		base, err := url.Parse(apiURL)
		if err != nil || base.Scheme == "" || base.Host == "" {
			return BotInfo{}, fmt.Errorf("%w: discord.api_url %q is not an absolute URL", ErrConfig, apiURL)
		}
		shown = rewriteURL(endpoint, base).String()
	}
	u, err := s.User("@me", discordgo.WithContext(ctx))
	var rest *discordgo.RESTError
	switch {
	case errors.As(err, &rest) && rest.Response != nil:
		msg := ""
		if rest.Message != nil {
			msg = rest.Message.Message
		}
		return BotInfo{}, &refusedError{shown: shown, status: rest.Response.StatusCode, message: scrub(msg, token)}
	case err != nil:
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is shown already
		}
		return BotInfo{}, fmt.Errorf("%s: %s", shown, scrub(err.Error(), token))
	}
	return BotInfo{ID: u.ID, Username: u.Username}, nil
}

// refusedError is an answer other than 200; it wraps ErrTokenRefused.
type refusedError struct {
	shown   string
	status  int
	message string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s answered %d %s", e.shown, e.status, e.message)
}

func (e *refusedError) Unwrap() error { return ErrTokenRefused }

// scrub keeps a token out of text a server sent back.
func scrub(text, token string) string {
	if token == "" {
		return text
	}
	return strings.ReplaceAll(text, token, "<token>")
}
