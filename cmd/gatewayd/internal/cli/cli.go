// Package cli is what gatewayd's commands share: their standard streams,
// the --config flag and how flags are parsed, the usage text, and the
// mapping of errors to the documented exit codes.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
)

// Exit codes; documented in the usage text.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// Stdio bundles the standard streams so commands can be tested.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// UsageError is a command-line mistake (exit 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef is a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ExitCode maps an error to the documented exit codes. A platform that
// rejects its configuration at run time (a revoked bot token) is a
// configuration error too: exit 2 is the status systemd does not restart.
func ExitCode(err error) int {
	var ue *UsageError
	var ce *config.Error
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue), errors.As(err, &ce), errors.Is(err, gateway.ErrConfig):
		return ExitUsage
	}
	return ExitFailure
}

// Flags is the common flag set: --config plus command-specific ones.
type Flags struct {
	FS     *flag.FlagSet
	Config string
}

// NewFlags is the flag set of command name; -h prints the usage text.
func NewFlags(name string, std Stdio) *Flags {
	f := &Flags{FS: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.FS.SetOutput(std.Err)
	f.FS.Usage = func() { fmt.Fprint(std.Err, Usage) }
	f.FS.StringVar(&f.Config, "config", "", "config file (YAML)")
	return f
}

// Parse accepts flags before and after positional arguments
// ("sessions show KEY --config f" and "sessions show --config f KEY").
func (f *Flags) Parse(args []string) ([]string, error) {
	var positional []string
	for {
		if err := f.FS.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, Usagef("%v", err)
		}
		args = f.FS.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// Options is where the configuration comes from: --config and this
// process's environment.
func (f *Flags) Options() config.Options {
	return config.Options{File: f.Config, Env: os.Environ()}
}

// Load loads the configuration as Options say.
func (f *Flags) Load() (*config.Config, error) {
	return config.Load(f.Options())
}

// IsTerminal reports whether r is a character device (a terminal, or
// /dev/null).
func IsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
