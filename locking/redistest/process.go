package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// One node's process: starting it (on a fresh or its old port) and
// ending, pausing, resuming and restarting it.

// Kill sends SIGKILL (after SIGCONT when paused) and waits for the process
// to exit. Killing a stopped node is a no-op.
func (n *Node) Kill() error {
	return n.end(func(cmd *exec.Cmd, done <-chan struct{}) error {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("redistest: kill node %d (pid %d): %w", n.idx, cmd.Process.Pid, err)
		}
		<-done
		return nil
	})
}

// end ends the running process with stop, which must return once the
// process has exited (done is closed): a paused process is resumed first,
// so it can act on stop's signal, and the node is marked not running. A
// node that is not running is left alone.
func (n *Node) end(stop func(cmd *exec.Cmd, done <-chan struct{}) error) error {
	n.mu.Lock()
	cmd, done, paused := n.cmd, n.done, n.paused
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	if err := stop(cmd, done); err != nil {
		return err
	}
	n.mu.Lock()
	if n.cmd == cmd {
		n.cmd, n.paused = nil, false
	}
	n.mu.Unlock()
	return nil
}

// Pause stops the process with SIGSTOP: it keeps its connections open but
// answers nothing, like a frozen VM.
func (n *Node) Pause() error { return n.signal(syscall.SIGSTOP, true) }

// Resume continues a paused process with SIGCONT.
func (n *Node) Resume() error { return n.signal(syscall.SIGCONT, false) }

func (n *Node) signal(sig syscall.Signal, paused bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("redistest: node %d (%s) is not running", n.idx, n.Addr())
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("redistest: %v node %d: %w", sig, n.idx, err)
	}
	n.paused = paused
	return nil
}

// Stop shuts the node down gracefully (SIGTERM; Redis flushes its
// append-only file) and waits for it to exit.
func (n *Node) Stop() error {
	return n.end(func(cmd *exec.Cmd, done <-chan struct{}) error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
		}
		return nil
	})
}

// Restart stops the node gracefully when it runs and starts it again on the
// same port with the same data directory: with AppendOnly the data is kept,
// without it the node comes back empty.
func (n *Node) Restart() error {
	if err := n.Stop(); err != nil {
		return err
	}
	return n.Start()
}

// Start starts a node that was killed or stopped, on its old port.
func (n *Node) Start() error {
	n.mu.Lock()
	running, stopped := n.cmd != nil, n.stopped
	n.mu.Unlock()
	if stopped {
		return fmt.Errorf("redistest: node %d: cluster closed", n.idx)
	}
	if running {
		return nil
	}
	// The port was ours a moment ago; another process could take it in
	// between, but on loopback in a test that is rare: retry briefly.
	var err error
	for i := 0; i < 20; i++ {
		if err = n.launch(); err == nil || !errors.Is(err, errPortInUse) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// StartEmpty starts a node that was killed or stopped, on its old port,
// with its data files removed first: it comes back with nothing, as a
// node without persistence does, and — unlike a FLUSHALL after Start —
// never acknowledges a write it then loses.
func (n *Node) StartEmpty() error {
	return n.startWithData(func() error {
		for _, name := range []string{"appendonlydir", "appendonly.aof", "dump.rdb"} {
			if err := os.RemoveAll(filepath.Join(n.dir, name)); err != nil {
				return fmt.Errorf("redistest: empty node %d: %w", n.idx, err)
			}
		}
		return nil
	})
}

// startWithData starts a node that was killed or stopped, on its old
// port, once prepare has changed its data files (StartEmpty, StartFrom):
// never while it runs, which would write over them.
func (n *Node) startWithData(prepare func() error) error {
	n.mu.Lock()
	running := n.cmd != nil
	n.mu.Unlock()
	if running {
		return fmt.Errorf("redistest: node %d (%s) is running: kill or stop it first", n.idx, n.Addr())
	}
	if err := prepare(); err != nil {
		return err
	}
	return n.Start()
}

func (n *Node) startFreshPort() error {
	var err error
	for i := 0; i < 5; i++ {
		n.port, err = freePort()
		if err != nil {
			return err
		}
		if n.c.cfg.clusterMode {
			if n.busPort, err = freePort(); err != nil {
				return err
			}
		}
		if err = n.launch(); err == nil || !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return err
}

var errPortInUse = errors.New("address already in use")

// launch starts the process and waits until it answers PING.
func (n *Node) launch() error {
	log := &syncBuffer{}
	cmd := exec.Command("redis-server", n.args()...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = n.dir
	cmd.SysProcAttr = sysProcAttr()
	if n.c.cfg.steppable {
		env, err := n.clockEnv()
		if err != nil {
			return err
		}
		cmd.Env = env
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()

	n.mu.Lock()
	n.cmd, n.done, n.paused, n.log = cmd, done, false, log
	n.mu.Unlock()

	if err := n.waitReady(done); err != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		n.mu.Lock()
		if n.cmd == cmd {
			n.cmd = nil
		}
		n.mu.Unlock()
		if bytes.Contains(log.Bytes(), []byte("already in use")) {
			return fmt.Errorf("redistest: node %d port %d: %w", n.idx, n.port, errPortInUse)
		}
		return fmt.Errorf("redistest: node %d (%s) did not start: %w\n%s", n.idx, n.Addr(), err, log.String())
	}
	return nil
}

func (n *Node) waitReady(done <-chan struct{}) error {
	cl := redis.NewClient(n.clientOptions())
	defer cl.Close()
	deadline := time.Now().Add(n.c.cfg.readyWait)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return errors.New("process exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		last = cl.Ping(ctx).Err()
		cancel()
		if last == nil {
			// With an append-only file Redis answers LOADING until it has
			// replayed it; PING already waits for that in Redis 7, but a
			// GET proves the dataset is there.
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			err := cl.Get(ctx, "redistest:probe").Err()
			cancel()
			if err == nil || errors.Is(err, redis.Nil) || !redis.IsLoadingError(err) {
				return nil // e.g. CLUSTERDOWN: up, but a cluster without slots yet
			}
			last = err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %v: %v", n.c.cfg.readyWait, last)
}
