package codex

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"go.uber.org/zap"
)

// process is one spawned app-server: its pipes, its process group and the
// goroutine that owns it.
type process struct {
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File      // parent's write end of the child's stdin
	stdout *os.File      // parent's read end of the child's stdout
	exited chan struct{} // closed once the child has been reaped
	err    error         // Wait's error; read only after exited is closed

	// kmu orders kill against reaping: once the leader is reaped its pid,
	// which is the group id, may be reused by an unrelated process group.
	kmu    sync.Mutex
	reaped bool
}

// spawn starts `binary app-server args...` in its own process group with
// SIGKILL as its parent-death signal.
//
// Pdeathsig fires when the *thread* that forked the child exits, not the
// process. The child is therefore forked from a goroutine locked to its OS
// thread that stays alive, blocked in Wait, for the child's whole life; the
// Go runtime never reuses or retires a locked thread under us. If gatewayd
// is SIGKILLed, that thread dies with it and the kernel kills the child.
func spawn(opts Options, binary string, log *zap.Logger) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("codex: stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("codex: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("codex: stderr pipe: %w", err)
	}

	args := append(append([]string{"app-server"}, opts.Args...), UnloadArgs...)
	cmd := exec.Command(binary, args...)
	cmd.Dir = opts.Dir
	cmd.Env = processEnv(opts)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{})}
	started := make(chan error, 1)
	go p.own(started, func(pid int) error { return limitChild(pid, opts) })
	startErr := <-started
	closeAll(inR, outW, errW) // the child holds its own copies now
	if startErr != nil {
		closeAll(inW, outR, errR)
		return nil, fmt.Errorf("codex: start %s: %w", binary, startErr)
	}
	p.pid = cmd.Process.Pid
	go drainStderr(errR, log.With(zap.Int("pid", p.pid)))
	return p, nil
}

// own forks the child on a locked OS thread, sets its limits, and reaps
// it (see spawn). A child whose limits cannot be set is killed: running
// commands without them would be silently less safe than configured.
func (p *process) own(started chan<- error, limit func(pid int) error) {
	runtime.LockOSThread()
	if err := p.cmd.Start(); err != nil {
		runtime.UnlockOSThread()
		started <- err
		return
	}
	pid := p.cmd.Process.Pid
	if err := limit(pid); err != nil {
		killGroup(pid)
		_ = p.cmd.Wait()
		runtime.UnlockOSThread()
		started <- err
		return
	}
	started <- nil
	// Stragglers the app-server forked (shell commands) share its group.
	// Kill them while the exited leader is still an unreaped zombie: until
	// it is reaped its pid cannot be reused, so -pid is still its group.
	if waitExitNoReap(pid) {
		killGroup(pid)
	}
	p.kmu.Lock()
	p.err = p.cmd.Wait()
	p.reaped = true
	p.kmu.Unlock()
	close(p.exited)
	// Returning while still locked makes the runtime retire this thread;
	// the child is already reaped, so the parent-death signal hits nobody.
}

// kill sends SIGKILL to the whole process group, unless its leader was
// already reaped: the group id may then belong to someone else.
func (p *process) kill() {
	p.kmu.Lock()
	defer p.kmu.Unlock()
	if !p.reaped {
		killGroup(p.pid)
	}
}

// waitExitNoReap blocks until the child pid has exited, leaving it a
// zombie (waitid with WNOWAIT). False if that is not possible.
func waitExitNoReap(pid int) bool {
	const pPID = 1     // P_PID
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return errno == 0
		}
	}
}

func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // ESRCH: already gone
	}
}

// processEnv is the parent's environment plus Options.Env, with CODEX_HOME
// last so it wins (exec keeps the last duplicate).
func processEnv(opts Options) []string {
	env := append(os.Environ(), opts.Env...)
	if opts.Home != "" {
		env = append(env, "CODEX_HOME="+opts.Home)
	}
	return env
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// ansiEscape matches CSI sequences (colours) in codex's tracing output.
var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;?]*[ -/]*[@-~]")

// drainStderr logs the child's stderr line by line at debug level. It must
// keep reading: a full stderr pipe would block the app-server.
func drainStderr(r *os.File, log *zap.Logger) {
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if text := strings.TrimSpace(ansiEscape.ReplaceAllString(line, "")); text != "" {
			log.Debug("codex.stderr", zap.String("line", text))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				log.Debug("codex.stderr.closed", zap.Error(err))
			}
			return
		}
	}
}
