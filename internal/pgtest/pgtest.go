// Package pgtest starts throwaway PostgreSQL servers for tests: initdb into
// a fresh directory, then postgres itself as a child process on a loopback
// port, so a test needs nothing installed but the server binaries (Debian's
// postgresql package). The server refuses to run as root, so when the tests
// run as root it runs as the postgres user the package creates.
//
// The postmaster is started with a parent-death signal: a test binary that
// is killed takes its servers with it instead of leaving them running.
package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/internal/processtest"
)

// Superuser is the role initdb creates; it authenticates with trust on the
// loopback port, so DSNs carry no password.
const Superuser = "gatewayd"

// startTimeout bounds initdb plus the server's start on a loaded machine.
const startTimeout = 60 * time.Second

// Options tune a server. The zero value is a fast, non-durable server.
type Options struct {
	// Durable keeps fsync on, for tests that kill the server itself and
	// expect committed rows to survive.
	Durable bool
}

// Server is one running PostgreSQL cluster.
type Server struct {
	bin   string
	dir   string
	port  int
	cred  *syscall.Credential
	cmd   *exec.Cmd
	exit  chan struct{}
	dbSeq atomic.Int64
	// frozen are the processes Freeze stopped besides the postmaster.
	frozen []int

	stopOnce sync.Once
}

// Start starts a server for tb and stops it when tb ends. It skips tb when
// the PostgreSQL binaries are missing, unless the CI variable is set: CI
// installs them, so there a missing server is a failure.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	needServer(tb)
	s, err := start(opts)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
)

// Shared returns one server for the whole test binary, started on first use.
// Packages that use it stop it from TestMain with Run, so its directory is
// removed; if the binary dies first, the parent-death signal stops it.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	needServer(tb)
	sharedOnce.Do(func() { shared, sharedErr = start(Options{}) })
	if sharedErr != nil {
		tb.Fatalf("pgtest: %v", sharedErr)
	}
	return shared
}

// Run runs the tests and then stops the shared server if one was started:
// use it as os.Exit(pgtest.Run(m)) in TestMain.
func Run(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	return code
}

// Available reports whether the PostgreSQL binaries are installed.
func Available() bool {
	_, err := findBin()
	return err == nil
}

// needServer skips tb when the PostgreSQL binaries are missing, unless the
// CI variable is set (skipOrFail), and under `go test -short` (make check):
// a test that starts a server is a process test, and make test runs it.
// The missing binaries come first, so CI fails on them even with -short.
func needServer(tb testing.TB) {
	tb.Helper()
	if !Available() {
		skipOrFail(tb, errNoBinaries)
	}
	processtest.SkipWhenShort(tb, "runs a PostgreSQL server")
}

func skipOrFail(tb testing.TB, err error) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf("pgtest: %v (CI must install Debian's postgresql package)", err)
	}
	tb.Skipf("pgtest: %v", err)
}

// DSN is the address of database name on this server.
func (s *Server) DSN(name string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, s.port, name)
}

// Port is the server's loopback TCP port.
func (s *Server) Port() int { return s.port }

// NewDatabase creates an empty database for tb and returns its DSN. Tests
// sharing one server stay apart by each taking its own database.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("t%d_%s", s.dbSeq.Add(1), sanitize(tb.Name()))
	if err := s.run("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", Superuser, name); err != nil {
		tb.Fatalf("pgtest: createdb %s: %v", name, err)
	}
	return s.DSN(name)
}

// Stop stops the server (fast shutdown) and removes its directory.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-s.exit:
			case <-time.After(30 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.exit
			}
		}
		_ = os.RemoveAll(s.dir)
	})
}

// Kill stops the server the way a crash does (SIGKILL), leaving its data
// directory for Restart.
func (s *Server) Kill() {
	_ = s.cmd.Process.Kill()
	<-s.exit
}

// Restart starts the server again on the same data directory and port,
// after Kill or Quit.
func (s *Server) Restart() error {
	return s.launch()
}

// FastRestart restarts the server as `pg_ctl restart -m fast` does: a
// fast shutdown (SIGINT: every session is ended with "terminating
// connection due to administrator command", open transactions roll back,
// committed ones are checkpointed), then a new start on the same data
// directory and port. It returns once the server accepts connections
// again. The server is our child, so we signal it ourselves instead of
// running pg_ctl, which would start the new one detached from the test.
func (s *Server) FastRestart() error {
	if err := s.stopWith(syscall.SIGINT, "a fast shutdown"); err != nil {
		return err
	}
	return s.launch()
}

// Quit stops the server as `pg_ctl stop -m immediate` does (SIGQUIT):
// every backend exits at once, as in a crash, with no transaction rolled
// back and no lock handed on to a session waiting for it, and the server
// stays down until Restart, which recovers from the WAL. Give it a Durable
// server: without synchronous commits, the last ones acknowledged may not
// be in the WAL yet, and are lost.
func (s *Server) Quit() error {
	return s.stopWith(syscall.SIGQUIT, "an immediate shutdown")
}

// stopWith signals the postmaster with sig and waits for it to exit.
func (s *Server) stopWith(sig syscall.Signal, what string) error {
	if err := s.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("pgtest: %s: %w", what, err)
	}
	select {
	case <-s.exit:
		return nil
	case <-time.After(startTimeout):
		return fmt.Errorf("pgtest: server did not stop within %s of %s", startTimeout, what)
	}
}

var errNoBinaries = errors.New("PostgreSQL server binaries not found (looked for initdb in /usr/lib/postgresql/*/bin and PATH)")

func start(opts Options) (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	if s.cred, err = serverCredential(); err != nil {
		return nil, err
	}
	if s.dir, err = s.makeDir(); err != nil {
		return nil, err
	}
	if s.port, err = freePort(); err != nil {
		return nil, errors.Join(err, os.RemoveAll(s.dir))
	}
	if err := s.initdb(opts); err != nil {
		return nil, errors.Join(err, os.RemoveAll(s.dir))
	}
	if err := s.launchOnFreePort(); err != nil {
		return nil, errors.Join(err, os.RemoveAll(s.dir))
	}
	return s, nil
}

// launchOnFreePort launches the server, on another free port when the one
// chosen was taken meanwhile: freePort closes its listener before postgres
// binds the port, and tests of other packages start servers at the same
// time.
func (s *Server) launchOnFreePort() error {
	for attempt := 1; ; attempt++ {
		err := s.launch()
		if err == nil || attempt == 5 || !strings.Contains(err.Error(), "Address already in use") {
			return err
		}
		if s.port, err = freePort(); err != nil {
			return err
		}
		if err := s.appendConf([]string{fmt.Sprintf("port = %d", s.port)}); err != nil { // a later line wins
			return err
		}
	}
}

// findBin prefers the newest Debian install, then PATH.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errNoBinaries
}

// serverCredential is the postgres user when we are root (the server
// refuses root), and nil (ourselves) otherwise.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and there is no postgres user to run the server as: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) makeDir() (string, error) {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return "", err
	}
	for _, sub := range []string{"data", "sock"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			return "", errors.Join(err, os.RemoveAll(dir))
		}
	}
	if s.cred != nil {
		for _, p := range []string{dir, filepath.Join(dir, "data"), filepath.Join(dir, "sock")} {
			if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				return "", errors.Join(err, os.RemoveAll(dir))
			}
		}
	}
	return dir, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) initdb(opts Options) error {
	if err := s.run("initdb", "-D", filepath.Join(s.dir, "data"), "-U", Superuser, "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	conf := []string{
		"listen_addresses = '127.0.0.1'",
		fmt.Sprintf("port = %d", s.port),
		fmt.Sprintf("unix_socket_directories = '%s'", filepath.Join(s.dir, "sock")),
		"max_connections = 200",
		"log_min_messages = warning",
	}
	if !opts.Durable {
		conf = append(conf, "fsync = off", "synchronous_commit = off", "full_page_writes = off")
	}
	return s.appendConf(conf)
}

// appendConf adds lines to postgresql.conf; a later setting overrides an
// earlier one.
func (s *Server) appendConf(conf []string) error {
	f, err := os.OpenFile(filepath.Join(s.dir, "data", "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, "\n"+strings.Join(conf, "\n")+"\n")
	return errors.Join(err, f.Close())
}

// launch runs postgres in the foreground as our child and waits for its
// "ready to accept connections" log line, which it prints once it accepts.
func (s *Server) launch() error {
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(s.dir, "data"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	// The parent-death signal fires when the OS thread that started the
	// child exits, not the process, and Go may end idle threads: start it
	// from a goroutine locked to its thread that lives until the child does.
	started := make(chan error, 1)
	s.exit = make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(s.exit)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.cmd = cmd
	ready := make(chan struct{})
	tail := &lastLines{}
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			tail.add(sc.Text())
			if !signalled && strings.Contains(sc.Text(), "ready to accept connections") {
				signalled = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
		return nil
	case <-s.exit:
		return fmt.Errorf("postgres exited before it was ready: %s", tail)
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		<-s.exit
		return fmt.Errorf("postgres not ready after %s: %s", startTimeout, tail)
	}
}

// run runs one of the server's client or admin programs as the server user.
func (s *Server) run(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Dir = s.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// sanitize turns a test name into part of a database identifier.
func sanitize(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	return b.String()
}

// lastLines keeps the server's last log lines for a start-up error.
type lastLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lastLines) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	if len(l.lines) > 10 {
		l.lines = l.lines[1:]
	}
}

func (l *lastLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, " | ")
}
