package jobs

// The exec plugin's process group: signalling it, telling whether any of
// it is still alive, and reaping it within the stop grace.

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// signalGroup sends sig to every process of the group; a group that is
// already gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig)
	}
}

// groupAlive reports whether any process (other than a zombie) is left in
// the process group.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err != nil {
		return !errors.Is(err, syscall.ESRCH)
	}
	// kill succeeds on zombies too, which cannot run and will be reaped
	// by their new parent; treat a group of zombies as gone.
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc: assume alive, the SIGKILL below is safe
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pg, state, ok := procStat(pid); ok && pg == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procStat reads the process group and state of pid from /proc/pid/stat.
func procStat(pid int) (pgid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, false
	}
	return pg, f[0][0], true
}

// reapGroup makes sure no process of the group survives: if any is left,
// it gets SIGTERM (unless it got one at termAt), then SIGKILL once grace
// has passed since that SIGTERM.
func reapGroup(pgid int, termAt time.Time, grace time.Duration) {
	if !groupAlive(pgid) {
		return
	}
	if termAt.IsZero() {
		termAt = time.Now()
		signalGroup(pgid, syscall.SIGTERM)
	}
	if waitGroupGone(pgid, termAt.Add(grace)) {
		return
	}
	signalGroup(pgid, syscall.SIGKILL)
	// SIGKILL is delivered asynchronously; wait (briefly) until the kernel
	// has really ended them, so the run's end means they are gone.
	waitGroupGone(pgid, time.Now().Add(2*time.Second))
}

// waitGroupGone polls until the group is gone (true) or deadline (false).
func waitGroupGone(pgid int, deadline time.Time) bool {
	for time.Now().Before(deadline) {
		time.Sleep(min(10*time.Millisecond, time.Until(deadline)))
		if !groupAlive(pgid) {
			return true
		}
	}
	return !groupAlive(pgid)
}
