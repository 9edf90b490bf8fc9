// Package redistest starts real redis-server processes for tests, the way
// net/http/httptest starts real HTTP servers.
//
// Each node is its own redis-server process listening on a free loopback
// port (never 6379), without persistence unless asked (--save "" and
// --appendonly no). Nodes are stopped by PID when the test ends; a paused
// (SIGSTOP) node is resumed before it is killed so nothing is left behind.
// Faults are real: Kill (SIGKILL), Pause (SIGSTOP), Resume (SIGCONT) and
// Restart (same port, same data directory).
//
// In a test:
//
//	c := redistest.Start(t, 3)
//	addrs := c.Addrs()
//
// From a TestMain, a benchmark driver or any program, use New and Close:
//
//	c, err := redistest.New(3)
//	if err != nil { ... }
//	defer c.Close()
//
// redis-server must be on PATH (Debian/Ubuntu: apt-get install -y redis-server).
package redistest

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// InstallHint is the command that installs the binary these helpers need.
const InstallHint = "apt-get install -y redis-server"

// ErrNoServer reports that redis-server is not on PATH.
var ErrNoServer = errors.New("redistest: redis-server not found on PATH; install it with: " + InstallHint)

// TB is the part of testing.TB that Start uses; *testing.T and *testing.B
// satisfy it, and so can a small adapter in a non-test program.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Option configures the nodes of a Cluster.
type Option func(*config)

type config struct {
	appendOnly bool
	aofNodes   map[int]bool
	tls        bool
	password   string
	user       string
	readyWait  time.Duration
	extraArgs  []string
}

// AppendOnly gives every node an append-only file (appendfsync always) in
// its own temporary directory, so Restart and even Kill keep the data
// already acknowledged.
func AppendOnly() Option { return func(c *config) { c.appendOnly = true } }

// AppendOnlyOn is AppendOnly for the listed nodes only (0-based); the
// others run without persistence.
func AppendOnlyOn(nodes ...int) Option {
	return func(c *config) {
		if c.aofNodes == nil {
			c.aofNodes = map[int]bool{}
		}
		for _, i := range nodes {
			c.aofNodes[i] = true
		}
	}
}

// TLS makes every node listen with TLS only. A throwaway CA and a server
// certificate for 127.0.0.1 and localhost are generated in Go;
// Cluster.ClientTLS returns a client config that trusts them.
func TLS() Option { return func(c *config) { c.tls = true } }

// Password sets requirepass on every node (the "default" user).
func Password(pw string) Option { return func(c *config) { c.password = pw } }

// User creates an ACL user with full rights and password pw on every node
// and disables the "default" user, so only that user can connect.
func User(name, pw string) Option {
	return func(c *config) { c.user, c.password = name, pw }
}

// Args appends raw redis-server arguments to every node's command line.
func Args(args ...string) Option {
	return func(c *config) { c.extraArgs = append(c.extraArgs, args...) }
}

// Cluster is a set of independent redis-server processes (not a Redis
// Cluster: the nodes do not know each other, as Redlock wants).
type Cluster struct {
	cfg   config
	dir   string
	tlsCA *generatedCA
	nodes []*Node
}

// Node is one redis-server process. Its methods are safe for concurrent use.
type Node struct {
	c    *Cluster
	idx  int
	port int
	dir  string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has been waited for
	paused  bool
	log     *syncBuffer
	client  *redis.Client
	stopped bool // Close was called
}

// Start starts k nodes and stops them when the test ends. It calls
// t.Fatalf when redis-server is missing or does not come up.
func Start(t TB, k int, opts ...Option) *Cluster {
	t.Helper()
	c, err := New(k, opts...)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// New starts k nodes; the caller must call Close. It returns ErrNoServer
// when redis-server is not on PATH.
func New(k int, opts ...Option) (*Cluster, error) {
	if k < 1 {
		return nil, fmt.Errorf("redistest: need at least 1 node, got %d", k)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, ErrNoServer
	}
	c := &Cluster{cfg: config{readyWait: 10 * time.Second}}
	for _, o := range opts {
		o(&c.cfg)
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	c.dir = dir
	if c.cfg.tls {
		ca, err := generateCA(dir)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		c.tlsCA = ca
	}
	for i := 0; i < k; i++ {
		n := &Node{c: c, idx: i, dir: filepath.Join(dir, "node"+strconv.Itoa(i))}
		if err := os.MkdirAll(n.dir, 0o700); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("redistest: %w", err)
		}
		c.nodes = append(c.nodes, n)
	}
	// Start the processes in parallel: each waits for its own readiness.
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.startFreshPort()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Close kills every node (resuming paused ones first), waits for the
// processes to exit and removes their data directories. It is idempotent.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range c.nodes {
		n.mu.Lock()
		n.stopped = true
		n.mu.Unlock()
		if err := n.Kill(); err != nil {
			errs = append(errs, err)
		}
		n.mu.Lock()
		if n.client != nil {
			_ = n.client.Close()
			n.client = nil
		}
		n.mu.Unlock()
	}
	if c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Nodes returns the nodes in start order.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns node i.
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// Addrs returns "127.0.0.1:port" of every node, in start order.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

// Username and Password return the credentials the nodes require ("" when
// none; the username is "" when only requirepass is set).
func (c *Cluster) Username() string { return c.cfg.user }
func (c *Cluster) Password() string { return c.cfg.password }

// ClientTLS returns a client TLS config trusting the generated CA, with
// ServerName 127.0.0.1, or nil when the cluster does not use TLS.
func (c *Cluster) ClientTLS() *tls.Config {
	if c.tlsCA == nil {
		return nil
	}
	return &tls.Config{RootCAs: c.tlsCA.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// CAFile returns the path of the generated CA certificate (PEM), or "".
func (c *Cluster) CAFile() string {
	if c.tlsCA == nil {
		return ""
	}
	return c.tlsCA.caFile
}

// Addr returns "127.0.0.1:port". The port stays the same across Restart.
func (n *Node) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// Port returns the node's TCP port.
func (n *Node) Port() int { return n.port }

// PID returns the process id, or 0 when the node is not running.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Running reports whether the process is alive (paused counts as alive).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// Log returns what the process wrote so far (its log goes to stdout).
func (n *Node) Log() string { return n.log.String() }

// Client returns a go-redis client for this node alone, configured with the
// cluster's credentials and TLS, to inspect or change the node directly.
// It is created once and closed by Cluster.Close.
func (n *Node) Client() *redis.Client {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.client == nil {
		n.client = redis.NewClient(n.clientOptions())
	}
	return n.client
}

func (n *Node) clientOptions() *redis.Options {
	return &redis.Options{
		Addr:        n.Addr(),
		Username:    n.c.cfg.user,
		Password:    n.c.cfg.password,
		TLSConfig:   n.c.ClientTLS(),
		DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second,
		MaxRetries:  -1,
		PoolSize:    4,
		// Honour the caller's context deadline on the socket, so a
		// command to a paused node ends when the caller's context does.
		ContextTimeoutEnabled: true,
	}
}

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

func (n *Node) startFreshPort() error {
	var err error
	for i := 0; i < 5; i++ {
		n.port, err = freePort()
		if err != nil {
			return err
		}
		if err = n.launch(); err == nil || !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return err
}

var errPortInUse = errors.New("address already in use")

func (n *Node) args() []string {
	cfg := n.c.cfg
	a := []string{
		"--bind", "127.0.0.1",
		"--dir", n.dir,
		"--save", "",
		"--daemonize", "no",
		"--logfile", "",
		"--loglevel", "notice",
		"--protected-mode", "no",
		"--databases", "1",
	}
	if cfg.appendOnly || cfg.aofNodes[n.idx] {
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		a = append(a, "--appendonly", "no")
	}
	if cfg.tls {
		a = append(a,
			"--port", "0",
			"--tls-port", strconv.Itoa(n.port),
			"--tls-cert-file", n.c.tlsCA.certFile,
			"--tls-key-file", n.c.tlsCA.keyFile,
			"--tls-ca-cert-file", n.c.tlsCA.caFile,
			"--tls-auth-clients", "no",
		)
	} else {
		a = append(a, "--port", strconv.Itoa(n.port))
	}
	switch {
	case cfg.user != "":
		// Each word is its own argv element: redis-server joins the
		// words after an option into one config line.
		a = append(a,
			"--user", cfg.user, "on", ">"+cfg.password, "~*", "&*", "+@all",
			"--user", "default", "off",
		)
	case cfg.password != "":
		a = append(a, "--requirepass", cfg.password)
	}
	return append(a, cfg.extraArgs...)
}

// launch starts the process and waits until it answers PING.
func (n *Node) launch() error {
	log := &syncBuffer{}
	cmd := exec.Command("redis-server", n.args()...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = n.dir
	cmd.SysProcAttr = sysProcAttr()
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

func freePort() (int, error) {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port != 6379 && port != 6380 {
			return port, nil
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Keep the log bounded: a long benchmark must not grow it forever.
	if s.b.Len() > 1<<20 {
		s.b.Reset()
	}
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func (s *syncBuffer) String() string { return string(s.Bytes()) }
