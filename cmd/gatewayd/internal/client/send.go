package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/platforms/api"
)

// sendUser names the sender of `gatewayd send` in the lane's transcript:
// scripts, not a person at a terminal (chat uses $USER).
const sendUser = "cli"

// Send is `gatewayd send [--config FILE] [--json] LANE [TEXT...]`: one
// message as a turn through the running daemon's API lane, the reply on
// stdout. The arguments are checked before the config is loaded, so a
// mistake is a usage error whatever the config says.
func Send(ctx context.Context, args []string, std cli.Stdio) error {
	f := cli.NewFlags("send", std)
	asJSON := f.FS.Bool("json", false, "print the daemon's whole JSON answer")
	pos, err := parseSendArgs(f, args)
	if err != nil {
		return err
	}
	lane, err := sendLane(pos)
	if err != nil {
		return err
	}
	text, err := sendText(pos[1:], std)
	if err != nil {
		return err
	}
	cfg, err := f.Load()
	if err != nil {
		return err
	}
	// Ctrl-C ends the wait with a message naming the message id (the
	// daemon goes on with the turn) rather than killing the process mid-line.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return send(ctx, NewAPI(cfg), lane, text, *asJSON, std)
}

// parseSendArgs is flags.parse up to a "--": every argument after it is
// text, so a message may start with "-" (`gatewayd send web -- -v means?`).
func parseSendArgs(f *cli.Flags, args []string) ([]string, error) {
	head, tail := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		head, tail = args[:i], args[i+1:]
	}
	pos, err := f.Parse(head)
	if err != nil {
		return nil, err
	}
	return append(pos, tail...), nil
}

// sendLane checks the lane name with the API's own rule, so a bad name is
// a usage error here rather than a 400 from the daemon.
func sendLane(pos []string) (string, error) {
	if len(pos) == 0 {
		return "", cli.Usagef("send needs a lane name: gatewayd send LANE [TEXT...]")
	}
	if _, ok := api.LaneSessionKey(pos[0]); !ok {
		return "", cli.Usagef("send: bad lane name %q: use 1-128 characters of A-Z a-z 0-9 . _ -", pos[0])
	}
	return pos[0], nil
}

// sendText is the words joined by spaces, or with none all of stdin minus
// one trailing newline (what `echo text |` adds).
func sendText(words []string, std cli.Stdio) (string, error) {
	text := strings.Join(words, " ")
	if len(words) == 0 {
		var err error
		if text, err = readStdinText(std); err != nil {
			return "", err
		}
	}
	switch {
	case strings.TrimSpace(text) == "":
		// The daemon refuses blank text too; say so before dialling it.
		return "", cli.Usagef("send: the text is empty: give it after LANE or on stdin")
	case len(text) > api.MaxTextBytes:
		return "", cli.Usagef("send: the text is %d bytes, more than the API's %d", len(text), api.MaxTextBytes)
	}
	return text, nil
}

func readStdinText(std cli.Stdio) (string, error) {
	if cli.IsTerminal(std.In) {
		fmt.Fprintln(std.Err, "gatewayd send: reading the message from the terminal; end it with Ctrl-D")
	}
	// A little past the limit, so too long is told apart from just right.
	b, err := io.ReadAll(io.LimitReader(std.In, api.MaxTextBytes+3))
	if err != nil {
		return "", fmt.Errorf("send: read stdin: %w", err)
	}
	s := string(b)
	if t, ok := strings.CutSuffix(s, "\r\n"); ok {
		return t, nil
	}
	return strings.TrimSuffix(s, "\n"), nil
}

// sendAnswer is the part of the API's Response that send prints.
type sendAnswer struct {
	chatResult
	Files []api.FileRef `json:"files"`
}

// send posts the message, waits for the whole answer and prints it; the
// error says why the exit status is not 0.
func send(ctx context.Context, c *API, lane, text string, asJSON bool, std cli.Stdio) error {
	// A fresh id per run: a user retrying gets a new turn, while the id
	// still lets them find an answer they stopped waiting for.
	id := "cli-" + rand.Text()
	body, err := postForAnswer(ctx, c, lane, id, text)
	if err != nil {
		return sendFailure(ctx, err, c, lane, id)
	}
	var ans sendAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return fmt.Errorf("send: the daemon's answer is not JSON: %v", err)
	}
	if asJSON {
		printJSON(body, std.Out)
	} else {
		printAnswer(ans, c, std)
	}
	return ans.outcome()
}

// postForAnswer POSTs a non-streaming JSON message and returns the answer
// body. The client has no timeout of its own: the daemon ends the turn at
// codex.turn_timeout, and only ctx (Ctrl-C) ends the wait sooner.
func postForAnswer(ctx context.Context, c *API, lane, id, text string) ([]byte, error) {
	path := "/api/lanes/" + url.PathEscape(lane) + "/messages"
	req, err := c.Request(ctx, http.MethodPost, path, map[string]string{"text": text, "user": sendUser, "id": id})
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, &httpError{path: path, status: resp.StatusCode, text: apiErrorText(resp)}
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("gatewayd: reading the answer: %w", err)
	}
	return body, nil
}

// httpError is a non-2xx answer of the API.
type httpError struct {
	path   string
	status int
	text   string // the API's error message and status line
}

func (e *httpError) Error() string {
	msg := fmt.Sprintf("POST %s: %s", e.path, e.text)
	if e.status == http.StatusUnauthorized {
		// Without a token the daemon answers only its own user and root.
		msg += "; set api.token or api.token_file to the daemon's token (or pass its --config), or run as the daemon's user or with sudo"
	}
	return msg
}

// sendFailure words a failed request as one line: Run prefixes
// "gatewayd: ", so the client's own prefix is dropped.
func sendFailure(ctx context.Context, err error, c *API, lane, id string) error {
	var he *httpError
	switch {
	case errors.Is(err, errDaemonDown):
		return fmt.Errorf("daemon not running: nothing listens on %s (api.listen); start it with `gatewayd run`, or pass its --config", c.Base)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted before the answer; a message the daemon got is still answered: GET /api/lanes/%s/messages/%s", lane, id)
	case errors.As(err, &he):
		return err
	}
	if inner := errors.Unwrap(err); inner != nil {
		err = inner // the *url.Error under apiClient.send's "gatewayd: POST ...:"
	}
	return fmt.Errorf("no answer from the daemon: %v", err)
}

func printJSON(body []byte, out io.Writer) {
	var b bytes.Buffer
	if json.Indent(&b, bytes.TrimSpace(body), "", "  ") != nil {
		// The body was decoded already, so this does not happen; print it
		// as it came rather than nothing.
		b.Reset()
		b.Write(bytes.TrimSpace(body))
	}
	b.WriteByte('\n')
	_, _ = out.Write(b.Bytes())
}

// printAnswer puts the reply alone on stdout, for pipes, and what rode
// along (notices, files the agent sent) on stderr.
func printAnswer(ans sendAnswer, c *API, std cli.Stdio) {
	for _, n := range ans.Notices {
		fmt.Fprintln(std.Err, "* "+n)
	}
	for _, f := range ans.Files {
		fmt.Fprintf(std.Err, "* file %s: %s%s\n", f.Name, c.Base, f.URL)
	}
	if ans.Reply != "" {
		fmt.Fprintln(std.Out, ans.Reply)
	}
}

// outcome is nil only for a completed turn: scripts read exit 0 as "the
// agent did it".
func (a sendAnswer) outcome() error {
	switch a.Status {
	case "completed":
		return nil
	case "notice":
		return errors.New("no turn ran: the lane answered with a notice")
	case "":
		return errors.New("the daemon's answer has no turn status")
	}
	return fmt.Errorf("the turn did not complete (status %q)", a.Status)
}
