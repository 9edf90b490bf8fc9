package redistest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// A Redis node expires keys, and answers TIME, by its own wall clock: a
// node whose clock is stepped (a bad NTP source, a VM restored from a
// snapshot, an operator's date command) ends every lease it holds early,
// or keeps it late. That is the fault Redlock's critics name first, and it
// cannot be made from outside the process: redis-server reads its clock
// through gettimeofday. SteppableClocks starts every node with a small
// preloaded library (clockShim, built once per test binary with the C
// compiler) that adds an offset, read from a file in the node's directory,
// to the wall clock the node sees; StepClock writes it. The monotonic
// clock, which times Redis' own event loop, is left alone.

// SteppableClocks starts every node under the clock shim, so that
// Node.StepClock can step its wall clock. It needs a C compiler (cc) and
// the C library's headers (Debian: gcc and libc6-dev).
func SteppableClocks() Option { return func(c *config) { c.steppable = true } }

// StepClock sets the node's wall clock to the real one plus offset (0: the
// real clock again), as the node sees it from within a few milliseconds:
// its TIME, its keys' expiry, its scripts' clock. Keys keep their absolute
// expiry times, so a step forward ends leases early and a step back keeps
// them late. The node must have been started with SteppableClocks.
func (n *Node) StepClock(offset time.Duration) error {
	if !n.c.cfg.steppable {
		return fmt.Errorf("redistest: node %d was not started with SteppableClocks", n.idx)
	}
	// Written whole, then renamed: the shim never reads half a number.
	tmp := n.clockFile() + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(offset.Microseconds(), 10)), 0o600); err != nil {
		return fmt.Errorf("redistest: step clock: %w", err)
	}
	if err := os.Rename(tmp, n.clockFile()); err != nil {
		return fmt.Errorf("redistest: step clock: %w", err)
	}
	time.Sleep(2 * clockShimPoll)
	return nil
}

// clockFile holds the node's clock offset in microseconds.
func (n *Node) clockFile() string { return filepath.Join(n.dir, "clock-offset-us") }

// clockEnv is the environment that starts redis-server under the shim.
func (n *Node) clockEnv() ([]string, error) {
	lib, err := buildClockShim()
	if err != nil {
		return nil, err
	}
	return append(os.Environ(), "LD_PRELOAD="+lib, "REDISTEST_CLOCK_FILE="+n.clockFile()), nil
}

// clockShimPoll is how often, at most, the shim reads the offset file.
const clockShimPoll = 5 * time.Millisecond

var clockShim struct {
	once sync.Once
	path string
	err  error
}

// buildClockShim compiles clockShimSource into a shared library, once per
// process.
func buildClockShim() (string, error) {
	clockShim.once.Do(func() {
		cc, err := exec.LookPath("cc")
		if err != nil {
			clockShim.err = errors.New("redistest: SteppableClocks needs a C compiler (cc) on PATH; install it with: apt-get install -y gcc libc6-dev")
			return
		}
		dir, err := os.MkdirTemp("", "redistest-clock-")
		if err != nil {
			clockShim.err = fmt.Errorf("redistest: %w", err)
			return
		}
		src, lib := filepath.Join(dir, "clockshim.c"), filepath.Join(dir, "clockshim.so")
		if err := os.WriteFile(src, []byte(clockShimSource), 0o600); err != nil {
			clockShim.err = fmt.Errorf("redistest: %w", err)
			return
		}
		poll := fmt.Sprintf("-DPOLL_NS=%dLL", clockShimPoll.Nanoseconds())
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", poll, "-o", lib, src).CombinedOutput(); err != nil {
			clockShim.err = fmt.Errorf("redistest: build the clock shim (needs gcc and libc6-dev): %v: %s", err, out)
			return
		}
		// The library stays for the life of the process: nodes restart
		// from it.
		clockShim.path = lib
	})
	return clockShim.path, clockShim.err
}

// clockShimSource replaces the C library's wall-clock functions. It calls
// the kernel directly (no dlsym, no allocation: redis-server's allocator
// reads the clock while it starts, before anything may allocate), and
// reads the offset file at most every clockShimPoll (POLL_NS, defined
// when it is built).
const clockShimSource = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile long long offset_us, checked_ns;

static int real_clock(clockid_t id, struct timespec *ts) {
	return (int)syscall(SYS_clock_gettime, id, ts);
}

static long long offset(void) {
	struct timespec m;
	real_clock(CLOCK_MONOTONIC, &m);
	long long now = (long long)m.tv_sec * 1000000000LL + m.tv_nsec;
	if (checked_ns != 0 && now - checked_ns < POLL_NS) {
		return offset_us;
	}
	checked_ns = now;
	const char *path = getenv("REDISTEST_CLOCK_FILE");
	if (path == NULL) {
		return offset_us;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return offset_us;
	}
	char buf[32];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		offset_us = strtoll(buf, NULL, 10);
	}
	return offset_us;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	int r = real_clock(id, ts);
	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
		long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset() * 1000LL;
		ts->tv_sec = ns / 1000000000LL;
		ts->tv_nsec = ns % 1000000000LL;
	}
	return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
	(void)tz;
	struct timespec ts;
	int r = clock_gettime(CLOCK_REALTIME, &ts);
	if (r == 0 && tv != NULL) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return r;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t != NULL) {
		*t = ts.tv_sec;
	}
	return ts.tv_sec;
}
`
