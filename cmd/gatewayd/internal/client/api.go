// Package client holds the commands that talk to a running gatewayd through
// its local API, or read its store when it is not running: chat, send,
// sessions, cluster status and worktrees prune.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/gatewayd/gatewayd/config"
)

// API talks to the local API of a running daemon.
type API struct {
	Base  string // http://host:port
	Token string // api.token; "" sends none
	HTTP  *http.Client
	// RetryBusy is how many times Send retries a 503 that names its
	// Retry-After (every connection in use, or uploads' space full): the
	// daemon did not take the request, so sending it again is safe.
	RetryBusy int
}

// NewAPI is the client of the daemon cfg configures.
func NewAPI(cfg *config.Config) *API {
	return &API{Base: "http://" + dialAddr(cfg.API.Listen), Token: cfg.API.Token, HTTP: &http.Client{}, RetryBusy: 5}
}

// maxRetryWait bounds the wait a Retry-After may ask of Send.
const maxRetryWait = 5 * time.Second

// dialAddr turns a listen address into one a client can dial: a wildcard
// host means this machine.
func dialAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// Request is a request of method for path with body as JSON (nil: none),
// with the token.
func (c *API) Request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("gatewayd: encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("gatewayd: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return req, nil
}

// Send performs req; a refused connection is errDaemonDown. A 503 with
// Retry-After is tried again up to RetryBusy times.
func (c *API) Send(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := c.HTTP.Do(req)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				return nil, errDaemonDown
			}
			return nil, fmt.Errorf("gatewayd: %s %s: %w", req.Method, req.URL.Path, err)
		}
		wait := busyWait(resp)
		if wait == 0 || attempt >= c.RetryBusy || (req.Body != nil && req.GetBody == nil) {
			return resp, nil
		}
		resp.Body.Close()
		t := time.NewTimer(wait)
		select {
		case <-req.Context().Done():
			t.Stop()
			return nil, fmt.Errorf("gatewayd: %s %s: %w", req.Method, req.URL.Path, req.Context().Err())
		case <-t.C:
		}
		if req.GetBody != nil {
			if req.Body, err = req.GetBody(); err != nil {
				return nil, fmt.Errorf("gatewayd: %w", err)
			}
		}
	}
}

// busyWait is how long a 503 asks to wait before trying again (0: not such
// an answer), at most maxRetryWait.
func busyWait(resp *http.Response) time.Duration {
	if resp.StatusCode != http.StatusServiceUnavailable {
		return 0
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs <= 0 {
		return 0
	}
	return min(time.Duration(secs)*time.Second, maxRetryWait)
}

// Do sends a request (Request) and decodes a 2xx answer into out (nil:
// ignored); another status is an error with the API's message.
func (c *API) Do(ctx context.Context, method, path string, body, out any) error {
	req, err := c.Request(ctx, method, path, body)
	if err != nil {
		return err
	}
	resp, err := c.Send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("gatewayd: %s %s: %s", method, req.URL.Path, apiErrorText(resp))
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("gatewayd: decode %s: %w", req.URL.Path, err)
	}
	return nil
}
