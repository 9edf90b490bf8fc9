// Package pgtest starts a real PostgreSQL server for tests, the way
// net/http/httptest starts real HTTP servers and locking/redistest starts
// redis-server: initdb into a fresh temporary directory, then postgres
// listening on a free loopback port (never 5432, so a PostgreSQL already
// running on the machine is never touched), with its socket in that
// directory. The server is stopped by PID (SIGQUIT, then SIGKILL) and the
// directory removed when the test ends; if the test binary dies, the
// kernel kills the server (PDEATHSIG).
//
// In a test:
//
//	srv := pgtest.Start(t)              // skips when PostgreSQL is not installed
//	db, err := sql.Open("pgx", srv.DSN())
//
// Under CI=true a missing PostgreSQL fails the test instead of skipping
// it: CI installs it (.ci/test). The binaries come from PATH or from
// Debian's /usr/lib/postgresql/<version>/bin (apt-get install -y
// postgresql). initdb refuses to run as root: as root, the server runs as
// the "postgres" user (which Debian's package creates), owning the data
// directory.
//
// Durability is off (fsync, synchronous_commit, full_page_writes): a test
// server is thrown away, and the guard's semantics do not depend on it.
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotlock/slotlock/internal/freeport"
)

// InstallHint is the command that installs what this package needs.
const InstallHint = "apt-get install -y postgresql"

// ErrNoServer reports that initdb or postgres was not found.
var ErrNoServer = errors.New("pgtest: PostgreSQL (initdb, postgres) not found on PATH or in /usr/lib/postgresql/*/bin; install it with: " + InstallHint)

// Server is one running postgres.
type Server struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// Start starts a server and stops it when the test ends. Without
// PostgreSQL it skips the test with the install hint, or fails it when the
// environment has CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New()
	if err != nil {
		Unavailable(t, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Unavailable ends a test that needed a server New could not start: it
// skips for ErrNoServer (with the install hint), except under CI=true where
// CI installs PostgreSQL and a missing one fails, and fails for any other
// error. For a server shared by a package's tests (New in a sync.Once).
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNoServer) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%v (CI=true: .ci/test installs Debian's postgresql package)", err)
		}
		t.Skipf("%v", err)
	}
	t.Fatalf("%v", err)
}

// New starts a server; the caller must Close it. It returns ErrNoServer
// when PostgreSQL is not installed.
func New() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir}
	if err := s.start(bin, cred); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// DSN is a connection URL for the superuser "postgres" to the database
// "postgres", without TLS: postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable.
func (s *Server) DSN() string {
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(s.port) + "/postgres?sslmode=disable"
}

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// PID is the postmaster's process id, 0 when it is not running.
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Log returns what the server logged so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	return string(b)
}

func (s *Server) start(bin string, cred *syscall.Credential) error {
	data := filepath.Join(s.dir, "data")
	if cred != nil {
		// The server's user owns the directory; the test's user (root)
		// can still read and remove it.
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C")
	initdb.SysProcAttr = sysProcAttr(cred)
	initdb.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	port, err := freeport.Loopback(5432) // never the machine's own PostgreSQL
	if err != nil {
		return err
	}
	s.port = port
	log, err := os.Create(filepath.Join(s.dir, "postgres.log"))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	s.log = log
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=50", "-c", "shared_buffers=16MB")
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = sysProcAttr(cred)
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	s.done = make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(s.done)
	}()
	return s.waitReady(30 * time.Second)
}

// waitReady waits until the port accepts connections and the server says
// it is ready.
func (s *Server) waitReady(within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("pgtest: postgres exited at start:\n%s", s.Log())
		default:
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.port), 200*time.Millisecond); err == nil {
			_ = c.Close()
			if containsReady(s.Log()) {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("pgtest: postgres not ready within %v:\n%s", within, s.Log())
}

func containsReady(log string) bool {
	return strings.Contains(log, "database system is ready to accept connections")
}

// Close stops the server (SIGQUIT: immediate shutdown; SIGKILL after 5s),
// waits for it and removes its directory. It is idempotent.
func (s *Server) Close() error {
	var errs []error
	if s.cmd != nil && s.cmd.Process != nil {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-s.done:
			case <-time.After(5 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.done
			}
		}
		s.cmd = nil
	}
	if s.log != nil {
		_ = s.log.Close()
		s.log = nil
	}
	if s.dir != "" {
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, err)
		}
		s.dir = ""
	}
	return errors.Join(errs...)
}

// binDir finds the directory holding initdb and postgres: PATH first (where
// initdb is usually a link into the versioned directory), then the newest
// /usr/lib/postgresql/<version>/bin.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			if _, err := os.Stat(filepath.Join(filepath.Dir(real), "postgres")); err == nil {
				return filepath.Dir(real), nil
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoServer
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// credential is the user the server runs as: nil (the test's own user)
// unless the test runs as root, which initdb and postgres refuse; then
// "postgres".
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses root: need the user \"postgres\" (Debian's postgresql package creates it): %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
