package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// spawner starts child processes from one OS thread that lives as long as the
// Env. Pdeathsig is delivered when the thread that forked the child exits, so
// pinning every fork to a long-lived thread makes children die with the parent
// process, also when a test panics or times out.
type spawner struct {
	reqs chan spawnReq
	done chan struct{}
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq), done: make(chan struct{})}
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		close(started)
		for {
			select {
			case r := <-s.reqs:
				r.err <- r.cmd.Start()
			case <-s.done:
				return
			}
		}
	}()
	<-started
	return s
}

func (s *spawner) start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	r := spawnReq{cmd: cmd, err: make(chan error, 1)}
	s.reqs <- r
	return <-r.err
}

func (s *spawner) close() { close(s.done) }

// process is one running control-plane binary.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	err     error
}

func (e *Env) run(name string, args ...string) (*process, error) {
	return e.runPath(name, e.binary(name), args...)
}

// runPath runs the binary at path, logging to <dir>/<name>.log.
func (e *Env) runPath(name, path string, args ...string) (*process, error) {
	logPath := fmt.Sprintf("%s/%s.log", e.dir, name)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating log of %s: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = e.dir
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	if err := e.spawner.start(cmd); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	e.procs = append(e.procs, p)
	return p, nil
}

// stop asks the process to end and kills it (and its process group) if it is
// still alive after grace.
func (p *process) stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// tail returns the last n bytes of the process's log.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}
