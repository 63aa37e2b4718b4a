package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
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

// processes are the control plane's child processes: each started from one
// long-lived OS thread (spawner), from the binaries in binDir unless given
// a path, logging into logDir, and stopped in the reverse order.
type processes struct {
	binDir  string
	logDir  string
	spawner *spawner
	procs   []*process
}

// run runs the binary name of binDir.
func (ps *processes) run(name string, args ...string) (*process, error) {
	return ps.runPath(name, ps.binary(name), args...)
}

// runPath runs the binary at path, logging to <logDir>/<name>.log.
func (ps *processes) runPath(name, path string, args ...string) (*process, error) {
	logPath := fmt.Sprintf("%s/%s.log", ps.logDir, name)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating log of %s: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = ps.logDir
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	if err := ps.spawner.start(cmd); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	ps.procs = append(ps.procs, p)
	return p, nil
}

func (ps *processes) binary(name string) string { return filepath.Join(ps.binDir, name) }

// named is the process called name and its index in procs; nil and -1
// when none is.
func (ps *processes) named(name string) (*process, int) {
	for i, p := range ps.procs {
		if p.name == name {
			return p, i
		}
	}
	return nil, -1
}

// stopAll stops every process in the reverse order of their start (etcd
// last) and the spawner's thread.
func (ps *processes) stopAll() {
	for i := len(ps.procs) - 1; i >= 0; i-- {
		grace := 5 * time.Second
		if ps.procs[i].name == "kube-apiserver" {
			grace = 2 * time.Second // it can hang on SIGTERM; nothing is lost by killing it
		}
		ps.procs[i].stop(grace)
	}
	ps.procs = nil
	if ps.spawner != nil {
		ps.spawner.close()
		ps.spawner = nil
	}
}

// logTails returns the ends of every process's log, for a start failure.
func (ps *processes) logTails() string {
	var b strings.Builder
	for _, p := range ps.procs {
		fmt.Fprintf(&b, "--- %s (%s) ---\n%s\n", p.name, p.logPath, p.tail(4000))
	}
	return b.String()
}

// PIDs returns the process IDs of the running control-plane processes.
func (ps *processes) PIDs() []int {
	var pids []int
	for _, p := range ps.procs {
		if p.running() {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	return pids
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
