package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/gateway"
)

// chatUser names the terminal user in the lane's transcript.
func chatUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "terminal"
}

// Chat is `gatewayd chat`.
func Chat(ctx context.Context, args []string, std cli.Stdio) error {
	f := cli.NewFlags("chat", std)
	pos, err := f.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return cli.Usagef("chat takes at most one lane name, got %q", pos)
	}
	lane := "default"
	if len(pos) == 1 {
		lane = pos[0]
	}
	cfg, err := f.Load()
	if err != nil {
		return err
	}
	return Talk(ctx, NewAPI(cfg), lane, chatUser(), std)
}

// Talk reads lines from std.In and sends each to the lane, printing the
// streamed reply. Lines starting with "/" are lane commands (/reset, /status,
// ...) and go to the daemon like any text; /quit or end of input leaves.
func Talk(ctx context.Context, c *API, lane, user string, std cli.Stdio) error {
	fmt.Fprintf(std.Err, "gatewayd chat: lane %q via %s (/help for commands, /quit or Ctrl-D to leave)\n", lane, c.Base)
	sc := bufio.NewScanner(std.In)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for {
		fmt.Fprint(std.Err, "> ")
		if !sc.Scan() {
			fmt.Fprintln(std.Err)
			return sc.Err()
		}
		line := strings.TrimSpace(sc.Text())
		switch line {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		}
		if err := chatTurn(ctx, c, lane, user, line, std.Out); err != nil {
			if errors.Is(err, errDaemonDown) {
				return fmt.Errorf("gatewayd: nothing listens on %s; start the daemon with `gatewayd run`", c.Base)
			}
			return err
		}
	}
}

// chatTurn posts one message and prints the reply as it streams.
func chatTurn(ctx context.Context, c *API, lane, user, text string, out io.Writer) error {
	path := "/api/lanes/" + url.PathEscape(lane) + "/messages"
	req, err := c.Request(ctx, http.MethodPost, path, map[string]string{"text": text, "user": user})
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("gatewayd: %s: %s", path, apiErrorText(resp))
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		var r chatResult
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return fmt.Errorf("gatewayd: decode reply: %w", err)
		}
		for _, n := range r.Notices {
			fmt.Fprintln(out, "* "+n)
		}
		fmt.Fprintln(out, r.text())
		return nil
	}
	return printStream(resp.Body, out)
}

// chatResult is the API's answer to a message (and the SSE "done" data).
type chatResult struct {
	Reply   string   `json:"reply"`
	Status  string   `json:"status"` // turn status, or "notice" for a command's answer
	Notices []string `json:"notices"`
}

// text is the reply with a non-completed status marked.
func (r chatResult) text() string {
	if r.Status != "" && r.Status != "completed" && r.Status != "notice" {
		return strings.TrimSpace(r.Reply + "\n[" + r.Status + "]")
	}
	return r.Reply
}

// printStream renders the API's server-sent events: "delta" (new text of
// the growing reply, a JSON string), "replace" (the whole reply changed),
// "notice" (a lane notice), "error", and "done" (the final Response).
func printStream(body io.Reader, out io.Writer) error {
	r := &streamRenderer{out: out}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	var event string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				r.event(event, strings.Join(data, "\n"))
			}
			event, data = "", nil
		case strings.HasPrefix(line, ":"):
			// comment / keep-alive
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if len(data) > 0 {
		r.event(event, strings.Join(data, "\n"))
	}
	r.endLine()
	if err := sc.Err(); err != nil {
		return fmt.Errorf("gatewayd: reading reply stream: %w", err)
	}
	return nil
}

// streamRenderer prints a reply as it grows on a terminal.
type streamRenderer struct {
	out     io.Writer
	emitted string // reply text printed so far
	midLine bool   // the cursor is not at the start of a line
	// shown is the work view's lines already printed (progress events
	// repeat the whole view; a terminal prints each action once, ended).
	shown map[string]bool
}

func (r *streamRenderer) print(s string) {
	if s == "" {
		return
	}
	fmt.Fprint(r.out, s)
	r.midLine = !strings.HasSuffix(s, "\n")
}

func (r *streamRenderer) endLine() {
	if r.midLine {
		fmt.Fprintln(r.out)
		r.midLine = false
	}
}

// progress prints what the work view newly shows: each action once it
// ended, a reconnect notice, and the summary when the turn is done.
func (r *streamRenderer) progress(v gateway.WorkView) {
	if r.shown == nil {
		r.shown = map[string]bool{}
	}
	var lines []string
	for _, a := range v.Actions {
		if a.Status != "inProgress" && !r.shown["action:"+a.ID] {
			r.shown["action:"+a.ID] = true
			lines = append(lines, "· "+actionLine(a))
		}
	}
	if v.Retry != "" && !r.shown["retry:"+v.Retry] {
		r.shown["retry:"+v.Retry] = true
		lines = append(lines, "! "+v.Retry)
	}
	if v.Done && v.Summary != "" {
		lines = append(lines, "· "+v.Summary)
	}
	for _, l := range lines {
		r.endLine()
		r.print(l + "\n")
	}
}

// actionLine is one ended action for the terminal.
func actionLine(a gateway.WorkAction) string {
	line := a.Title
	switch {
	case a.Kind == gateway.WorkCommand:
		line = "$ " + a.Title
		if a.ExitCode != nil {
			line += fmt.Sprintf(" (exit %d)", *a.ExitCode)
		}
	case a.Kind == gateway.WorkFileEdit:
		line = fmt.Sprintf("edited %s (+%d −%d)", a.Title, a.Added, a.Removed)
	}
	if a.Status != "completed" {
		line += " [" + a.Status + "]"
	}
	return line
}

// text decodes an event's data: a JSON string, or the raw data.
func eventText(data string) string {
	var s string
	if json.Unmarshal([]byte(data), &s) == nil {
		return s
	}
	return data
}

func (r *streamRenderer) event(event, data string) {
	switch event {
	case "", "delta", "message":
		r.emitted += eventText(data)
		r.print(eventText(data))
	case "replace":
		// The reply was rewritten; a terminal cannot unprint, so start over
		// on a fresh line.
		r.endLine()
		r.emitted = eventText(data)
		r.print(r.emitted)
	case "notice":
		r.endLine()
		r.print("* " + eventText(data) + "\n")
	case "error":
		r.endLine()
		r.print("! " + eventText(data) + "\n")
	case "progress":
		var v gateway.WorkView
		if json.Unmarshal([]byte(data), &v) == nil {
			r.progress(v)
		}
	case "done":
		var res chatResult
		if json.Unmarshal([]byte(data), &res) != nil {
			return
		}
		switch rest, ok := strings.CutPrefix(res.Reply, r.emitted); {
		case r.emitted == "":
			r.print(res.text())
		case ok:
			r.print(rest)
		default:
			r.endLine()
			r.print(res.Reply)
		}
		if res.Status != "" && res.Status != "completed" && res.Status != "notice" && r.emitted != "" {
			r.endLine()
			r.print("[" + res.Status + "]")
		}
	}
}
