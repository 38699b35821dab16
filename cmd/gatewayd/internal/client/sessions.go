package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/daemon"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/webconsole"
)

// errDaemonDown means nothing listens on api.listen: the CLI may open the
// store itself.
var errDaemonDown = errors.New("gatewayd: daemon not running")

// Sessions is `gatewayd sessions list|show|search|reset`.
func Sessions(ctx context.Context, args []string, std cli.Stdio) error {
	f := cli.NewFlags("sessions", std)
	limit := f.FS.Int("limit", 50, "how many lanes (list) or messages (show)")
	pos, err := f.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return cli.Usagef("sessions needs a subcommand: list, show KEY, search TEXT or reset KEY")
	}
	sub, rest := pos[0], pos[1:]
	want := map[string]int{"list": 0, "show": 1, "reset": 1, "search": -1}
	n, known := want[sub]
	switch {
	case !known:
		return cli.Usagef("unknown sessions subcommand %q", sub)
	case n < 0 && len(rest) == 0:
		return cli.Usagef("sessions %s needs the words to find", sub)
	case n >= 0 && len(rest) != n:
		return cli.Usagef("sessions %s takes %d argument(s), got %d", sub, n, len(rest))
	}
	cfg, err := f.Load()
	if err != nil {
		return err
	}
	client := NewAPI(cfg)
	err = runSessions(ctx, client, sub, rest, *limit, std.Out)
	if !errors.Is(err, errDaemonDown) {
		return err
	}
	// The daemon is not running: nobody holds the store's lock. Only an
	// existing database is opened: a missing one means this configuration
	// names another state_dir than the daemon's (e.g. sudo without
	// --config), and creating an empty database there would only mislead.
	if _, err := os.Stat(cfg.DatabasePath()); err != nil && !cfg.Store.Postgres() {
		return fmt.Errorf("gatewayd: no database at %s (is state_dir the daemon's? pass --config): %w", cfg.DatabasePath(), err)
	}
	st, err := daemon.OpenStore(ctx, cfg, store.Options{Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("gatewayd: open store: %w", err)
	}
	defer st.Close()
	return runSessionsOffline(ctx, offlineBackend{st}, webconsole.NewWorkdirs(cfg), sub, rest, *limit, std.Out)
}

// offlineBackend serves the sessions commands from the store when the
// daemon is down; reset then changes the store exactly as /reset does
// (the app-server holds no loaded thread to release), dropping the lane's
// waiting messages as /reset drops its queue.
type offlineBackend struct{ st *store.Store }

func (b offlineBackend) Lanes(ctx context.Context, limit int) ([]store.Lane, error) {
	return b.st.Lanes(ctx, limit)
}
func (b offlineBackend) Lane(ctx context.Context, key string) (store.Lane, error) {
	return b.st.Lane(ctx, key)
}
func (b offlineBackend) Transcript(ctx context.Context, key string, limit int) ([]store.Message, error) {
	return b.st.Transcript(ctx, key, limit)
}
func (b offlineBackend) LaneUsagePeriods(ctx context.Context, key, sender string, at time.Time, loc *time.Location) (store.UsagePeriods, error) {
	return b.st.LaneUsagePeriods(ctx, key, sender, at, loc)
}
func (b offlineBackend) Search(ctx context.Context, query string, limit int) ([]store.Message, error) {
	return b.st.Search(ctx, query, limit)
}
func (b offlineBackend) Reset(ctx context.Context, key string) error {
	if _, err := b.st.Lane(ctx, key); err != nil {
		return err
	}
	// Before the reset, so a failure between the two cannot leave an old
	// message to be run in the fresh conversation at the next start.
	if _, err := b.st.IgnorePendingInbound(ctx, key); err != nil {
		return err
	}
	_, err := b.st.ResetLane(ctx, key, "reset by operator")
	return err
}

func runSessionsOffline(ctx context.Context, b webconsole.SessionsBackend, dirs webconsole.Workdirs, sub string, args []string, limit int, out io.Writer) error {
	switch sub {
	case "list":
		lanes, err := b.Lanes(ctx, limit)
		if err != nil {
			return fmt.Errorf("gatewayd: sessions list: %w", err)
		}
		views := make([]webconsole.LaneView, 0, len(lanes))
		for _, l := range lanes {
			views = append(views, webconsole.ViewLane(l, dirs))
		}
		return printLanes(out, views)
	case "show":
		v, err := webconsole.LoadSession(ctx, b, dirs, args[0], limit)
		if err != nil {
			return fmt.Errorf("gatewayd: sessions show %s: %w", args[0], err)
		}
		return printSession(out, v)
	case "search":
		msgs, err := b.Search(ctx, strings.Join(args, " "), limit)
		if err != nil {
			return fmt.Errorf("gatewayd: sessions search: %w", err)
		}
		return printFound(out, webconsole.ViewFound(msgs))
	}
	if err := b.Reset(ctx, args[0]); err != nil {
		return fmt.Errorf("gatewayd: sessions reset %s: %w", args[0], err)
	}
	fmt.Fprintf(out, "reset %s\n", args[0])
	return nil
}

// runSessions asks the running daemon; errDaemonDown when it is not there.
func runSessions(ctx context.Context, c *API, sub string, args []string, limit int, out io.Writer) error {
	switch sub {
	case "list":
		var views []webconsole.LaneView
		if err := c.Do(ctx, http.MethodGet, webconsole.AdminPrefix+"sessions?limit="+strconv.Itoa(limit), nil, &views); err != nil {
			return err
		}
		return printLanes(out, views)
	case "show":
		var v webconsole.SessionView
		path := webconsole.AdminPrefix + "sessions/" + url.PathEscape(args[0]) + "?limit=" + strconv.Itoa(limit)
		if err := c.Do(ctx, http.MethodGet, path, nil, &v); err != nil {
			return err
		}
		return printSession(out, v)
	case "search":
		var found []webconsole.MessageView
		q := url.Values{"q": {strings.Join(args, " ")}, "limit": {strconv.Itoa(limit)}}
		if err := c.Do(ctx, http.MethodGet, webconsole.AdminPrefix+"search?"+q.Encode(), nil, &found); err != nil {
			return err
		}
		return printFound(out, found)
	}
	// The admin routes take POSTs only as JSON (415 otherwise): {} it is.
	if err := c.Do(ctx, http.MethodPost, webconsole.AdminPrefix+"sessions/"+url.PathEscape(args[0])+"/reset", struct{}{}, nil); err != nil {
		return err
	}
	fmt.Fprintf(out, "reset %s\n", args[0])
	return nil
}

func printLanes(out io.Writer, views []webconsole.LaneView) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tBINDING\tTHREAD\tTURNS\tLAST ACTIVE")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", v.Key, v.Binding, dash(v.ThreadID), v.Turns, when(v.LastActiveAt))
	}
	return tw.Flush()
}

// printFound lists search results, one line each, the text on one line.
func printFound(out io.Writer, found []webconsole.MessageView) error {
	if len(found) == 0 {
		_, err := fmt.Fprintln(out, "no messages found")
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LANE\tWHEN\tROLE\tTEXT")
	for _, m := range found {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Lane, when(m.CreatedAt), m.Role, oneLine(m.Text, 100))
	}
	return tw.Flush()
}

// oneLine is text with its whitespace runs folded to single spaces, cut
// to n runes.
func oneLine(text string, n int) string {
	s := strings.Join(strings.Fields(text), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func printSession(out io.Writer, v webconsole.SessionView) error {
	l := v.Lane
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	rows := [][2]string{
		{"key", l.Key}, {"platform", l.Platform}, {"kind", l.Kind}, {"chat", dash(l.ChatID)},
		{"topic", dash(l.TopicID)}, {"thread", dash(l.ThreadID)}, {"binding", l.Binding},
		{"generation", strconv.FormatInt(l.Generation, 10)}, {"session", strconv.FormatInt(l.SessionID, 10)},
		{"turns", strconv.FormatInt(l.Turns, 10)}, {"session started", when(l.SessionStarted)},
		{"last active", when(l.LastActiveAt)},
		{"project", projectText(l)}, {"directory", dash(l.Directory)},
		{"model", orDefault(l.Model)}, {"effort", orDefault(l.Effort)}, {"verbose", orDefault(l.Verbose)},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if u := v.Usage; u != nil {
		fmt.Fprintf(out, "tokens today (UTC): %s\n", totalsText(u.Today))
		fmt.Fprintf(out, "tokens this month (UTC): %s\n", totalsText(u.Month))
	}
	fmt.Fprintf(out, "\ntranscript (%d messages):\n", len(v.Transcript))
	for _, m := range v.Transcript {
		fmt.Fprintf(out, "[%s] %s: %s\n", when(m.CreatedAt), m.Role, m.Text)
	}
	return nil
}

// orDefault is a lane's own setting, or the words for none.
func orDefault(choice string) string {
	if choice == "" {
		return "- (default)"
	}
	return choice
}

// projectText is the lane's project as sessions show prints it.
func projectText(l webconsole.LaneView) string {
	switch {
	case l.Project == "":
		return "- (codex.cwd)"
	case l.Unconfigured:
		return l.Project + " (no longer configured: codex.cwd until chosen again)"
	}
	return l.Project
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

// apiErrorText renders an error response: its JSON "error" or its status.
func apiErrorText(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return fmt.Sprintf("%s (%s)", e.Error, resp.Status)
	}
	return resp.Status
}

// totalsText is one period's spend as sessions show prints it.
func totalsText(t webconsole.TotalsView) string {
	return fmt.Sprintf("%d in %d turns (input %d, of which cached %d; output %d, of which reasoning %d)",
		t.Tokens, t.Turns, t.InputTokens, t.CachedInputTokens, t.OutputTokens, t.ReasoningTokens)
}
