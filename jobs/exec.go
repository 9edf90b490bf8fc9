package jobs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slotlock/slotlock/internal/strictdecode"
)

// The exec plugin runs a program directly (no shell) in its own process
// group.
//
//	params:
//	  command: [argv0, arg1, ...]   # required; no shell, no word splitting
//	  env: {KEY: value}             # set for the program
//	  inherit_env: [NAME, ...]      # slotlock's own variables passed on by name
//	  dir: /path                    # working directory (default: slotlock's)
//	  kill_grace: 5s                # SIGTERM -> SIGKILL delay on cancel; < lock.ttl/2 - lock.max_clock_skew
//	  run_as_uid: 1000              # run as this user (slotlock needs CAP_SETUID)
//	  run_as_gid: 1000              # and group (default: run_as_uid)
//	  show_env: [MODE]              # env variables whose values may be logged
//	  show_args: [1, 2]             # positions in command whose values may be logged
//
// The process gets a minimal environment, not slotlock's: PATH, HOME, LANG
// and TZ (when slotlock has them), the variables named in inherit_env
// (when slotlock has them), then params.env, then the run's SLOTLOCK_JOB,
// SLOTLOCK_SLOT, SLOTLOCK_RUN_ID, SLOTLOCK_REPLICA, SLOTLOCK_FENCING_TOKEN
// and SLOTLOCK_ATTEMPT, and, when slotlock exports traces, the run's
// TRACEPARENT (and TRACESTATE: trace.go) (later entries win, so a job
// cannot fake its fencing token). So a job never sees the managed identity's IDENTITY_ENDPOINT,
// IDENTITY_HEADER or MSI_* variables, nor slotlock's SLOTLOCK_* settings
// (SLOTLOCK_REDIS__PASSWORD), unless inherit_env names them. Stdin is
// /dev/null. This keeps credentials from leaking by accident; it does not
// contain a hostile program running as slotlock's user, which can read
// slotlock's /proc/<pid>/environ: run_as_uid, or a separate container, does.
//
// When the run's context ends, the whole process group gets SIGTERM and,
// if any of it is still alive after kill_grace, SIGKILL. When the command
// exits by itself, processes it left behind in its group get the same
// treatment before the run ends, so a run never outlives its lease.
// Processes that leave the group (setsid, double fork with setpgid) are
// not tracked.
//
// The last 4 KiB of stdout and of stderr are logged in one line (event
// "exec.output") when the process ends. A non-zero exit fails the run with
// an error naming the exit code (or the signal) and the last stderr line.
// Exit code 75 (ExitStaleToken) is the fence recipes' refusal of a stale
// fencing token: that error's class is "stale_token", as for a Go job's
// fence.ErrStale, in history and on the run's last line.
//
// Redaction is by structure (SecretParams): every env value and every
// argument after command[0] is a secret unless show_env names the variable
// or show_args the position; the configuration dump shows them as "***",
// and their values (with credential-looking inherit_env values and every
// URL's user info and query values) are scrubbed from the output line and
// from every error the job returns.
func init() { Register("exec", newExecJob) }

// execTailBytes is how much of the end of stdout and of stderr the exec
// plugin keeps for its log line.
const execTailBytes = 4096

const defaultKillGrace = 5 * time.Second

type execParams struct {
	Command    []string          `yaml:"command"`
	Env        map[string]string `yaml:"env"`
	InheritEnv []string          `yaml:"inherit_env"`
	Dir        string            `yaml:"dir"`
	KillGrace  time.Duration     `yaml:"kill_grace"`
	RunAsUID   *uint32           `yaml:"run_as_uid"`
	RunAsGID   *uint32           `yaml:"run_as_gid"`
	// ShowEnv names the env variables whose values may be shown.
	ShowEnv []string `yaml:"show_env"`
	// ShowArgs lists the positions in command (1 and up) whose values may
	// be shown; command[0], the program, always is.
	ShowArgs []int `yaml:"show_args"`
}

// baseEnv are the variables of slotlock's environment every job gets.
var baseEnv = []string{"PATH", "HOME", "LANG", "TZ"}

type execJob struct {
	p        execParams
	graceSet bool        // params set kill_grace
	hidden   []ParamPath // SecretParams
	values   []string    // the values at hidden
}

func newExecJob(params map[string]any) (Job, error) {
	p := execParams{KillGrace: defaultKillGrace}
	if err := DecodeParamsHiding(params, &p, execSecretPath); err != nil {
		return nil, err
	}
	var errs []error
	switch {
	case len(p.Command) == 0:
		errs = append(errs, errors.New(`command: required: an argv list such as ["/usr/local/bin/report", "--daily"]`))
	case p.Command[0] == "":
		errs = append(errs, errors.New("command[0]: the program must not be empty"))
	}
	for i, a := range p.Command {
		if strings.ContainsRune(a, 0) {
			// Not quoted: an argument may be a secret.
			errs = append(errs, &strictdecode.FieldError{Path: "command[" + strconv.Itoa(i) + "]",
				Err: errors.New("contains a NUL byte, which no program argument can hold")})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			errs = append(errs, fmt.Errorf("env.%s: invalid variable name", k))
			continue
		}
		if strings.ContainsRune(p.Env[k], 0) {
			errs = append(errs, &strictdecode.FieldError{Path: "env." + k,
				Err: errors.New("the value contains a NUL byte, which no environment variable can hold")})
		}
	}
	if err := checkDir(p.Dir); err != nil {
		errs = append(errs, &strictdecode.FieldError{Path: "dir", Err: err})
	}
	for i, k := range p.InheritEnv {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			errs = append(errs, fmt.Errorf("inherit_env[%d]: invalid variable name %q", i, k))
		}
	}
	if p.RunAsGID != nil && p.RunAsUID == nil {
		errs = append(errs, errors.New("run_as_gid: only used with run_as_uid"))
	}
	if p.KillGrace < 0 {
		errs = append(errs, fmt.Errorf("kill_grace: must not be negative, got %s", p.KillGrace))
	}
	errs = append(errs, checkShown(p)...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	j := &execJob{p: p, graceSet: params["kill_grace"] != nil}
	for k := range p.Env {
		if !slices.Contains(p.ShowEnv, k) {
			j.hidden = append(j.hidden, ParamPath{"env", k})
			j.values = append(j.values, p.Env[k])
		}
	}
	for i := 1; i < len(p.Command); i++ {
		if !slices.Contains(p.ShowArgs, i) {
			j.hidden = append(j.hidden, ParamPath{"command", i})
			j.values = append(j.values, p.Command[i])
		}
	}
	return j, nil
}

// execSecretPath: the values of env and the arguments of command are
// secret-bearing (a command given as one string holds its arguments).
func execSecretPath(path string) bool {
	return path == "env" || strings.HasPrefix(path, "env.") ||
		path == "command" || (strings.HasPrefix(path, "command[") && path != "command[0]")
}

// checkShown checks the allow-lists: show_env names variables of env,
// show_args positions of command after the program.
func checkShown(p execParams) []error {
	var errs []error
	for i, k := range p.ShowEnv {
		if _, ok := p.Env[k]; !ok {
			errs = append(errs, fmt.Errorf("show_env[%d]: %q is not a variable of env", i, k))
		}
	}
	for i, n := range p.ShowArgs {
		if n < 1 || n >= len(p.Command) {
			errs = append(errs, fmt.Errorf("show_args[%d]: %d is not the position of an argument of command (1 to %d)",
				i, n, len(p.Command)-1))
		}
	}
	return errs
}

// SecretParams hides every env value and argument the allow-lists do not
// show.
func (j *execJob) SecretParams() []ParamPath { return j.hidden }

// StopGrace is how long a canceled run's processes may go on: kill_grace.
func (j *execJob) StopGrace() (time.Duration, bool) { return j.p.KillGrace, j.graceSet }

// WithStopGrace returns the job with kill_grace d.
func (j *execJob) WithStopGrace(d time.Duration) Job {
	c := *j
	c.p.KillGrace = d
	return &c
}

// env builds the process's environment: the minimal base, inherit_env,
// params.env, then the run's variables. It also returns the values that
// must not appear in the logged output: the hidden params and the
// credential-looking inherited variables (slotlock's own environment is
// not params, so only names and shapes can tell).
func (j *execJob) env(run Run) (env, secrets []string) {
	secrets = slices.Clone(j.values)
	for _, name := range slices.Concat(baseEnv, j.p.InheritEnv) {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
			if LooksSecret(name) || ValueLooksSecret(v) {
				secrets = append(secrets, v)
			}
		}
	}
	for k, v := range j.p.Env {
		env = append(env, k+"="+v)
	}
	return append(env,
		"SLOTLOCK_JOB="+run.Job,
		"SLOTLOCK_SLOT="+run.SlotString(),
		"SLOTLOCK_RUN_ID="+run.RunID,
		"SLOTLOCK_REPLICA="+run.Replica,
		"SLOTLOCK_FENCING_TOKEN="+strconv.FormatUint(run.FencingToken, 10),
		"SLOTLOCK_ATTEMPT="+strconv.Itoa(run.Attempt),
	), secrets
}

func (j *execJob) Run(ctx context.Context, run Run) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("exec: not started: %w", context.Cause(ctx))
	}
	cmd, scrub := j.command(ctx, run)
	p, err := startProcess(cmd)
	if err != nil {
		return scrub.Error(j.startError(err))
	}
	termAt, waitErr := p.waitOrStop(ctx, j.p.KillGrace)
	p.finish(termAt, j.p.KillGrace)
	runErr := j.outcome(ctx, p, termAt, waitErr, scrub)
	attrs := p.logAttrs(scrub)
	switch {
	case runErr != nil:
		run.Log().WarnContext(ctx, "exec: command failed", attrs...)
	case p.stdout.Total() == 0 && p.stderr.Total() == 0:
		// A success that printed nothing says nothing run.succeeded
		// does not (it has the duration too): at the default level it
		// would be a third line per run slot, on a billed log store.
		run.Log().DebugContext(ctx, "exec: command exited", attrs...)
	default:
		run.Log().InfoContext(ctx, "exec: command exited", attrs...)
	}
	return scrub.Error(runErr)
}

// command builds the run's process: its own group, the least environment
// (the job's, the trace context), the job's user; and the scrubber of the
// job's secret values.
func (j *execJob) command(ctx context.Context, run Run) (*exec.Cmd, *Scrubber) {
	cmd := exec.Command(j.p.Command[0], j.p.Command[1:]...)
	env, secrets := j.env(run)
	cmd.Env = append(env, TraceEnv(ctx)...)
	cmd.Dir = j.p.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if j.p.RunAsUID != nil {
		gid := *j.p.RunAsUID
		if j.p.RunAsGID != nil {
			gid = *j.p.RunAsGID
		}
		// No supplementary groups: the job gets its user's rights only.
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: *j.p.RunAsUID, Gid: gid, Groups: []uint32{}}
	}
	return cmd, NewScrubber(secrets...)
}

// checkDir reports a working directory that cannot be one: a NUL in it,
// nothing at the path, or not a directory. A path that cannot be looked at
// (permissions: run_as_uid may see more) is left to the run.
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	if strings.ContainsRune(dir, 0) {
		return errors.New("contains a NUL byte")
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no such directory: %s", dir)
	case err != nil:
		return nil
	case !fi.IsDir():
		return fmt.Errorf("not a directory: %s", dir)
	}
	return nil
}

// startError says why the program did not start.
func (j *execJob) startError(err error) error {
	argv0 := j.p.Command[0]
	if dirErr := checkDir(j.p.Dir); dirErr != nil {
		// The start fails the same way for a missing program and a
		// missing working directory; name the one that is missing.
		return fmt.Errorf("exec: start %q: working directory (params.dir): %w", argv0, dirErr)
	}
	if j.p.RunAsUID != nil && errors.Is(err, syscall.EPERM) {
		return fmt.Errorf("exec: start %q as uid %d: %w (run_as_uid needs slotlock to run as root or with CAP_SETUID and CAP_SETGID)",
			argv0, *j.p.RunAsUID, err)
	}
	return fmt.Errorf("exec: start %q: %w", argv0, err)
}

// ExitStaleToken is the exit code with which the fence recipes for exec
// jobs (examples/fenced-exec) report a write refused for a stale fencing
// token: a newer run of the job wrote first, and this one wrote nothing. A
// run whose program exits with it is recorded with error class
// "stale_token". (75 is EX_TEMPFAIL in sysexits.h: a program that uses it
// for other temporary failures gets the same class; the error still names
// the exit code and the last stderr line.)
const ExitStaleToken = 75

// outcome is the run's error: nil when the program exited 0 by itself.
func (j *execJob) outcome(ctx context.Context, p *process, termAt time.Time, waitErr error, scrub *Scrubber) error {
	argv0 := j.p.Command[0]
	ps := p.cmd.ProcessState
	switch {
	case !termAt.IsZero():
		// Canceled (the lease lost, say) while the program may have been
		// refused already: its own exit 75 still names the refusal.
		return staleExit(ps, fmt.Errorf("exec: %q stopped (%s): %w", argv0, describeExit(ps), context.Cause(ctx)))
	case waitErr != nil:
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			return fmt.Errorf("exec: %q: %w", argv0, waitErr)
		}
		return staleExit(ps, fmt.Errorf("exec: %q %s%s", argv0, describeExit(ps), lastLine(scrub.String(p.stderr.String()))))
	}
	return nil
}

// staleExit gives err the class "stale_token" when the program exited by
// itself with ExitStaleToken.
func staleExit(ps *os.ProcessState, err error) error {
	if ps != nil && ps.Exited() && ps.ExitCode() == ExitStaleToken {
		return &staleTokenError{err: err}
	}
	return err
}

func describeExit(ps *os.ProcessState) string {
	if ps == nil {
		return "did not exit"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exited with code %d", ps.ExitCode())
}

// lastLine returns ": <last non-empty line of s>" (at most 200 bytes), or
// "" when s is blank.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\r\n\t ")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if len(s) > 200 {
		s = s[len(s)-200:]
	}
	return ": " + strconv.Quote(s)
}
