//go:build linux

package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one process the suite started. It is registered until it has
// exited, so KillAll can stop whatever a failed or panicking test left.
type proc struct {
	name    string
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed once cmd.Wait returned

	mu     sync.Mutex
	frozen bool
	state  *os.ProcessState
	exited time.Time
}

var registry = struct {
	sync.Mutex
	procs map[*proc]struct{}
}{procs: map[*proc]struct{}{}}

// startProc starts cmd in its own process group (so a whole replica can be
// frozen) and registers it.
func startProc(name string, cmd *exec.Cmd) (*proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// If the test binary itself dies (a panic skips every cleanup), the
	// kernel kills what it started; jobs die with their replica in turn.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	registry.Lock()
	registry.procs[p] = struct{}{}
	registry.Unlock()
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		p.state, p.exited = cmd.ProcessState, time.Now()
		p.mu.Unlock()
		close(p.done)
		registry.Lock()
		delete(registry.procs, p)
		registry.Unlock()
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exitCode is the exit status, -1 for a signal, or -2 while running.
func (p *proc) exitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return -2
	}
	return p.state.ExitCode()
}

// tree returns the pids of the process and all its descendants, parents
// before children, read from /proc.
func tree(root int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces and parens.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

func signalAll(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
}

// freeze stops the process group and every descendant (a job started in
// its own group too), like a frozen VM or container.
func (p *proc) freeze() {
	if !p.running() {
		return
	}
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
	_ = syscall.Kill(-p.pid(), syscall.SIGSTOP)
	// Twice: a child forked while we walked is caught the second time.
	signalAll(tree(p.pid()), syscall.SIGSTOP)
	signalAll(tree(p.pid()), syscall.SIGSTOP)
}

// thaw continues the group and every descendant.
func (p *proc) thaw() {
	p.mu.Lock()
	p.frozen = false
	p.mu.Unlock()
	_ = syscall.Kill(-p.pid(), syscall.SIGCONT)
	signalAll(tree(p.pid()), syscall.SIGCONT)
}

// kill SIGKILLs the whole tree (continuing it first if frozen) and waits.
func (p *proc) kill() {
	if !p.running() {
		return
	}
	pids := tree(p.pid())
	signalAll(pids, syscall.SIGCONT)
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	signalAll(pids, syscall.SIGKILL)
	<-p.done
}

// terminate sends SIGTERM to the pid alone, as a container runtime does,
// and waits up to wait for the exit. It returns how long the exit took and
// an error when the process had to be killed.
func (p *proc) terminate(wait time.Duration) (time.Duration, error) {
	if !p.running() {
		return 0, nil
	}
	p.mu.Lock()
	frozen := p.frozen
	p.mu.Unlock()
	if frozen {
		p.thaw()
	}
	start := time.Now()
	_ = syscall.Kill(p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(start), nil
	case <-time.After(wait):
		p.kill()
		return time.Since(start), errors.New(p.name + ": did not exit within " + wait.String() + " of SIGTERM; killed")
	}
}

// KillAll kills every process the suite started that is still running.
func KillAll() {
	registry.Lock()
	var ps []*proc
	for p := range registry.procs {
		ps = append(ps, p)
	}
	registry.Unlock()
	for _, p := range ps {
		p.kill()
	}
}
