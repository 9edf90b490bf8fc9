//go:build linux

// Command ledgerjob is the job the e2e suite runs through slotlock's exec
// plugin. It appends one JSON line when it starts and one when it ends to a
// ledger file, each with a single O_APPEND write under flock, so lines from
// concurrent runs on several replicas never interleave:
//
//	ledgerjob LEDGER SLEEP [EXIT]
//
// The start line carries what the job received from slotlock
// (SLOTLOCK_JOB, _SLOT, _REPLICA, _FENCING_TOKEN, _RUN_ID, _ATTEMPT) and the
// wall-clock time; the end line repeats them with the outcome: "ok" after
// SLEEP, "failed" when EXIT is non-zero, "canceled" on SIGTERM/SIGINT (the
// exec plugin's cancel). A SIGKILL leaves no end line; the suite knows when
// it killed a replica.
//
// The process asks the kernel to SIGKILL it when its parent dies, so a
// replica killed with SIGKILL takes its job with it, as in a container.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/slotlock/slotlock/e2e/internal/ledger"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: ledgerjob LEDGER SLEEP [EXIT]")
		os.Exit(2)
	}
	ppid := os.Getppid()
	// Die with the parent (the replica), like every process of a killed
	// container. If the parent is already gone, stop now.
	_ = setPdeathsig(syscall.SIGKILL)
	if os.Getppid() != ppid {
		os.Exit(137)
	}
	path := os.Args[1]
	sleep, err := time.ParseDuration(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "ledgerjob:", err)
		os.Exit(2)
	}
	exit := 0
	if len(os.Args) > 3 {
		if exit, err = strconv.Atoi(os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "ledgerjob:", err)
			os.Exit(2)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)

	l := ledger.Line{
		Job:     os.Getenv("SLOTLOCK_JOB"),
		Slot:    os.Getenv("SLOTLOCK_SLOT"),
		Replica: os.Getenv("SLOTLOCK_REPLICA"),
		Token:   os.Getenv("SLOTLOCK_FENCING_TOKEN"),
		RunID:   os.Getenv("SLOTLOCK_RUN_ID"),
		Attempt: os.Getenv("SLOTLOCK_ATTEMPT"),
		PID:     os.Getpid(),
	}
	l.Ev = "start"
	if err := ledger.Append(path, l); err != nil {
		fmt.Fprintln(os.Stderr, "ledgerjob:", err)
		os.Exit(3)
	}
	t := time.NewTimer(sleep)
	code := 0
	l.Ev, l.Outcome = "end", "ok"
	select {
	case <-t.C:
		if exit != 0 {
			l.Outcome, code = "failed", exit
		}
	case <-sig:
		l.Outcome, code = "canceled", 143
	}
	if err := ledger.Append(path, l); err != nil {
		fmt.Fprintln(os.Stderr, "ledgerjob:", err)
		os.Exit(3)
	}
	os.Exit(code)
}

func setPdeathsig(sig syscall.Signal) error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(sig), 0)
	if errno != 0 {
		return errno
	}
	return nil
}
