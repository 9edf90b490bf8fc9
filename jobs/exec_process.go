package jobs

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is one started exec run: the program, the tails of its output
// and the goroutines that read them and wait for it.
type process struct {
	cmd            *exec.Cmd
	pgid           int
	outR, errR     *os.File
	stdout, stderr *tailBuffer
	copied         chan struct{} // one value per output drained
	waited         chan error    // cmd.Wait's result
	start          time.Time
	elapsed        time.Duration
}

// startProcess starts cmd with pipes of its own (rather than io.Writers
// handed to exec) so that Wait returns when the process exits even if a
// child still holds the write ends; the readers are bounded separately
// (finish).
func startProcess(cmd *exec.Cmd) (*process, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("exec: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	p := &process{cmd: cmd, outR: outR, errR: errR, start: time.Now(),
		stdout: newTailBuffer(execTailBytes), stderr: newTailBuffer(execTailBytes),
		copied: make(chan struct{}, 2), waited: make(chan error, 1)}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	p.pgid = cmd.Process.Pid
	drain := func(r *os.File, w io.Writer) {
		io.Copy(w, r)
		p.copied <- struct{}{}
	}
	go drain(outR, p.stdout)
	go drain(errR, p.stderr)
	go func() { p.waited <- cmd.Wait() }()
	return p, nil
}

// waitOrStop waits for the program to exit or, when ctx ends first, sends
// its group SIGTERM and, after grace, SIGKILL. termAt is when SIGTERM was
// sent, zero if never.
func (p *process) waitOrStop(ctx context.Context, grace time.Duration) (termAt time.Time, waitErr error) {
	select {
	case waitErr = <-p.waited:
		return time.Time{}, waitErr
	case <-ctx.Done():
	}
	termAt = time.Now()
	signalGroup(p.pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case waitErr = <-p.waited:
	case <-t.C:
		signalGroup(p.pgid, syscall.SIGKILL)
		waitErr = <-p.waited
	}
	return termAt, waitErr
}

// finish makes sure nothing of the program's group outlives the run, then
// reads the rest of its output: everything in the group is dead, so the
// pipes reach EOF unless a process escaped the group while holding them,
// which is not waited for past a second.
func (p *process) finish(termAt time.Time, grace time.Duration) {
	reapGroup(p.pgid, termAt, grace)
	deadline := time.Now().Add(time.Second)
	p.outR.SetReadDeadline(deadline)
	p.errR.SetReadDeadline(deadline)
	<-p.copied
	<-p.copied
	p.outR.Close()
	p.errR.Close()
	p.elapsed = time.Since(p.start)
}

// logAttrs are the exec.output line's attributes, output scrubbed.
func (p *process) logAttrs(scrub *Scrubber) []any {
	code := -1
	if p.cmd.ProcessState != nil {
		code = p.cmd.ProcessState.ExitCode()
	}
	attrs := []any{"event", "exec.output", "command", p.cmd.Args[0], "pid", p.pgid, "exit_code", code,
		"duration_ms", p.elapsed.Milliseconds(),
		"stdout", scrub.String(p.stdout.String()), "stderr", scrub.String(p.stderr.String())}
	if n := p.stdout.Total(); n > execTailBytes {
		attrs = append(attrs, "stdout_bytes", n)
	}
	if n := p.stderr.Total(); n > execTailBytes {
		attrs = append(attrs, "stderr_bytes", n)
	}
	return attrs
}
