package setup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/platforms/matrix"
)

// Matrix's step of `gatewayd init`: the homeserver, and an access token or
// the bot account's user and password, with which init logs in once and
// keeps the token (never the password); whoami checks the token and gives
// matrix.user_id.

const envMatrixToken = "GATEWAYD_MATRIX_ACCESS_TOKEN"

type matrixOptions struct {
	homeserver, tokenFile, user, passwordFile string
}

type matrixState struct {
	homeserver, token, userID string
	users                     []string
}

func (m matrixState) enabled() bool { return m.homeserver != "" && m.token != "" }

func (o *matrixOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.homeserver, "matrix-homeserver", "", "Matrix homeserver URL (https://matrix.example.org)")
	fs.StringVar(&o.tokenFile, "matrix-token-file", "", "file holding the bot account's Matrix access token")
	fs.StringVar(&o.user, "matrix-user", "", "the bot's Matrix user, to log in with --matrix-password-file instead of a token")
	fs.StringVar(&o.passwordFile, "matrix-password-file", "", "file holding the password of --matrix-user (used once, not stored)")
}

// given reports whether a flag named Matrix.
func (o matrixOptions) given() bool {
	return o.homeserver != "" || o.tokenFile != "" || o.user != "" || o.passwordFile != ""
}

// check validates the Matrix flags together: a homeserver, and a token or
// a user with a password, not both.
func (o *matrixOptions) check(interactive bool) error {
	if !o.given() {
		return nil
	}
	o.homeserver = strings.TrimRight(o.homeserver, "/")
	switch {
	case o.homeserver == "":
		return cli.Usagef("init: --matrix-homeserver is required with the other --matrix-… flags")
	case homeserverProblem(o.homeserver) != "":
		return cli.Usagef("init: --matrix-homeserver: %s", homeserverProblem(o.homeserver))
	case o.tokenFile != "" && (o.user != "" || o.passwordFile != ""):
		return cli.Usagef("init: give --matrix-token-file, or --matrix-user with --matrix-password-file, not both")
	case (o.user == "") != (o.passwordFile == ""):
		return cli.Usagef("init: --matrix-user and --matrix-password-file go together")
	case o.tokenFile == "" && o.user == "" && !interactive:
		return cli.Usagef("init: --matrix-homeserver needs --matrix-token-file, or --matrix-user and --matrix-password-file")
	}
	return nil
}

// homeserverProblem is what is wrong with a homeserver URL, or "".
func homeserverProblem(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || strings.Contains(u.Path, "/_matrix") {
		return fmt.Sprintf("%q is not a homeserver URL (use its base URL, e.g. https://matrix.example.org)", s)
	}
	return ""
}

// matrixFiles reads the token file; a password file is read when init
// logs in (matrixTokens).
func (c *initCmd) matrixFiles(st *initState) error {
	o := c.opts.matrix
	st.matrix.homeserver = o.homeserver
	if o.tokenFile == "" {
		return nil
	}
	var err error
	st.matrix.token, err = readTokenFile("--matrix-token-file", o.tokenFile)
	return err
}

// matrixTokens checks the token of the flags, or logs in with theirs,
// and, interactively, asks for the homeserver and a token or a login
// (an empty homeserver skips Matrix).
func (c *initCmd) matrixTokens(ctx context.Context, st *initState, fromFiles bool) error {
	m := &st.matrix
	o := c.opts.matrix
	if o.user != "" {
		password, err := readPasswordFile(o.passwordFile)
		if err != nil {
			return err
		}
		if m.token, err = c.matrixLogin(ctx, m.homeserver, o.user, password); err != nil && !c.interactive {
			return err
		} else if err != nil {
			fmt.Fprintf(c.std.Err, "%v\n", err)
		}
	}
	if m.enabled() {
		err := c.checkMatrixToken(ctx, m)
		if err == nil {
			return nil
		}
		if !c.interactive {
			return err
		}
		fmt.Fprintf(c.std.Err, "%v\n", err)
		m.token = ""
	}
	if !c.interactive || (fromFiles && !o.given()) {
		return nil // the files chose the platforms
	}
	return c.askMatrix(ctx, m)
}

// askMatrix asks for the homeserver, then a token or a login, until the
// homeserver accepts one.
func (c *initCmd) askMatrix(ctx context.Context, m *matrixState) error {
	for m.homeserver == "" {
		hs, err := c.ask("Matrix homeserver URL (e.g. https://matrix.example.org; empty to skip Matrix): ")
		if err != nil || hs == "" {
			return err
		}
		if msg := homeserverProblem(strings.TrimRight(hs, "/")); msg != "" {
			fmt.Fprintln(c.std.Err, msg)
			continue
		}
		m.homeserver = strings.TrimRight(hs, "/")
	}
	for {
		tok, err := c.askSecret("Matrix access token of the bot's account (empty to log in with its user and password): ")
		if err != nil {
			return err
		}
		if tok == "" {
			if tok, err = c.askMatrixLogin(ctx, m.homeserver); err != nil {
				return err
			}
			if tok == "" {
				continue // no password login here: a token then
			}
		} else if msg := tokenProblem(tok); msg != "" {
			fmt.Fprintf(c.std.Err, "matrix: that %s\n", msg)
			continue
		}
		m.token = tok
		if err := c.checkMatrixToken(ctx, m); err != nil {
			fmt.Fprintf(c.std.Err, "%v\n", err)
			m.token = ""
			continue
		}
		return nil
	}
}

// askMatrixLogin asks for the bot's user and password and logs in; ""
// without an error when the homeserver offers no password login.
func (c *initCmd) askMatrixLogin(ctx context.Context, homeserver string) (string, error) {
	for {
		user, err := c.ask("Matrix user of the bot (@name:server, or name): ")
		if err != nil {
			return "", err
		}
		if user == "" {
			continue
		}
		password, err := c.askSecret("Password (used once to log in; init keeps the token, not the password): ")
		if err != nil {
			return "", err
		}
		tok, err := c.matrixLogin(ctx, homeserver, user, password)
		switch {
		case errors.Is(err, matrix.ErrNoPasswordLogin):
			fmt.Fprintf(c.std.Err, "%v\n", err)
			return "", nil
		case err != nil:
			fmt.Fprintf(c.std.Err, "%v\n", err)
			continue
		}
		return tok, nil
	}
}

func (c *initCmd) matrixLogin(ctx context.Context, homeserver, user, password string) (string, error) {
	tok, err := matrix.Login(ctx, c.http, homeserver, user, password)
	switch {
	case errors.Is(err, matrix.ErrLoginRefused), errors.Is(err, matrix.ErrNoPasswordLogin):
		return "", &cli.UsageError{Msg: fmt.Sprintf("init: matrix refused the login: %v", err)}
	case err != nil:
		return "", fmt.Errorf("init: %w", err)
	case tokenProblem(tok) != "":
		return "", fmt.Errorf("init: matrix: the login's token %s", tokenProblem(tok))
	}
	fmt.Fprintf(c.std.Out, "Matrix: logged in as %s; the new device's token goes to the environment file\n", user)
	return tok, nil
}

// checkMatrixToken asks whoami and records the account as matrix.user_id.
func (c *initCmd) checkMatrixToken(ctx context.Context, m *matrixState) error {
	who, err := matrix.CheckToken(ctx, c.http, m.homeserver, m.token)
	switch {
	case errors.Is(err, matrix.ErrTokenRefused):
		return &cli.UsageError{Msg: fmt.Sprintf("init: matrix rejected the access token: %v", err)}
	case err != nil:
		return fmt.Errorf("init: %w", err)
	}
	m.userID = who.UserID
	fmt.Fprintf(c.std.Out, "Matrix: token accepted (%s)\n", who.UserID)
	return nil
}

// readPasswordFile reads a password: the file's first line, as typed
// (spaces and quotes included; it is never written anywhere).
func readPasswordFile(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", cli.Usagef("init: --matrix-password-file: cannot read %s: %v", file, errorCause(err))
	}
	password, _, _ := strings.Cut(string(b), "\n")
	password = strings.TrimSuffix(password, "\r")
	if password == "" {
		return "", cli.Usagef("init: --matrix-password-file: %s is empty", file)
	}
	return password, nil
}

// matrixUsers asks for the user ids to allow when no --allow-user named
// one; a Matrix id given without Matrix is a mistake.
func (c *initCmd) matrixUsers(st *initState) error {
	m := &st.matrix
	switch {
	case !m.enabled() && len(m.users) > 0:
		return cli.Usagef("init: --allow-user matrix:… given but no Matrix homeserver and token")
	case !m.enabled() || len(m.users) > 0:
		return nil
	case !c.interactive:
		return cli.Usagef("init: --allow-user is required for Matrix (full id, e.g. matrix:@alice:example.org)")
	}
	ids, err := c.askIDsChecked("Matrix user ids to allow (full ids such as @alice:example.org; separate with spaces): ", config.MatrixUserID)
	if err != nil {
		return err
	}
	m.users = ids
	return nil
}

// matrixYAML adds Matrix's keys to the config init writes: the
// homeserver and the account are no secrets; the token goes to the env file.
func (c *initCmd) matrixYAML(values map[string]any, st *initState) {
	if !st.matrix.enabled() {
		return
	}
	values["matrix.homeserver"] = st.matrix.homeserver
	if st.matrix.userID != "" {
		values["matrix.user_id"] = st.matrix.userID
	}
	values["matrix.allowed_users"] = st.matrix.users
}
