package setup

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
)

// ask prints prompt and reads one line (trimmed). End of input is an error.
func (c *initCmd) ask(prompt string) (string, error) {
	fmt.Fprint(c.std.Out, prompt)
	line, err := c.in.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		fmt.Fprintln(c.std.Out)
		return "", &cli.UsageError{Msg: "init: input ended before the questions were answered"}
	}
	return strings.TrimSpace(line), nil
}

func (c *initCmd) confirm(prompt string, def bool) (bool, error) {
	for {
		line, err := c.ask(prompt)
		if err != nil {
			return false, err
		}
		switch strings.ToLower(line) {
		case "":
			return def, nil
		case "y", "yes":
			return true, nil
		case "n", "no":
			return false, nil
		}
	}
}

// askSecret reads a line with the terminal's echo off.
func (c *initCmd) askSecret(prompt string) (string, error) {
	restore, err := echoOff(c.std.In)
	if err != nil {
		fmt.Fprintf(c.std.Err, "(cannot turn off echo: %v; the token will be visible as you type)\n", err)
	}
	if restore != nil {
		// Ctrl-C while echo is off must not leave the terminal silent.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		stop := make(chan struct{})
		go func() {
			select {
			case sig := <-sigs:
				restore()
				fmt.Fprintln(c.std.Out)
				signal.Stop(sigs)
				_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
			case <-stop:
			}
		}()
		defer func() {
			signal.Stop(sigs)
			close(stop)
			restore()
			fmt.Fprintln(c.std.Out) // the Enter was not echoed
		}()
	}
	return c.ask(prompt)
}

var _ flag.Value = (*listFlag)(nil)
