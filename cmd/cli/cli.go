package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes of the contract.
const (
	exitOK      = 0
	exitFailure = 1
	exitConfig  = 2
)

// Main runs the command line args (without the program name) with the
// process's environment and standard streams, and returns the exit code.
// run and trigger stop on SIGTERM or SIGINT.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return run(ctx, args, cmdEnv{Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ()})
}

// cmdEnv is what a command reads from and writes to besides its arguments.
type cmdEnv struct {
	Stdout, Stderr io.Writer
	Environ        []string // KEY=VALUE, as os.Environ
}

func (e cmdEnv) getenv(key string) string {
	for i := len(e.Environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(e.Environ[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// run is Main with an explicit context and environment; ctx ending is
// taken as SIGTERM.
func run(ctx context.Context, args []string, env cmdEnv) int {
	if len(args) == 0 {
		usage(env.Stderr)
		return exitConfig
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return cmdRun(ctx, rest, env)
	case "validate":
		return cmdValidate(rest, env)
	case "next":
		return cmdNext(rest, env)
	case "trigger":
		return cmdTrigger(ctx, rest, env)
	case "pause":
		return cmdPause(ctx, rest, env)
	case "resume":
		return cmdResume(ctx, rest, env)
	case "history":
		return cmdHistory(ctx, rest, env)
	case "status":
		return cmdStatus(ctx, rest, env)
	case "backfill":
		return cmdBackfill(ctx, rest, env)
	case "version", "--version", "-version":
		return cmdVersion(env)
	case "help", "-h", "--help", "-help":
		usage(env.Stdout)
		return exitOK
	default:
		fmt.Fprintf(env.Stderr, "slotlock: unknown command %q\n", cmd)
		usage(env.Stderr)
		return exitConfig
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: slotlock <command> [flags]

commands:
  run      [--config FILE]                 run one replica until SIGTERM/SIGINT
  validate [--config FILE] [-v]            check the configuration, print every error
  next     [--config FILE] [-n N] [JOB]    print the next N slots of each job (or of JOB)
  trigger  [--config FILE] JOB             run JOB once now, under the same locks
  pause    [--config FILE] [--for DUR] [--reason TEXT] JOB
                                           skip JOB's slots on every replica (until --for ends or resume)
  resume   [--config FILE] JOB             end a pause
  history  [--config FILE] [--json] [--since DUR|TIME] [--limit N] [--outcome O] JOB
                                           the job's recorded slot outcomes, newest first
  status   [--config FILE] [--json] [JOB]  per job: next slot, pause, last outcome, run going on; live replicas
  backfill [--config FILE] --from TIME --to TIME [--dry-run] JOB
                                           run, one by one under the normal locks, JOB's slots in [from, to]
                                           that have no recorded outcome (TIME: RFC 3339)
  version                                  print version, commit and Go version

--config defaults to $SLOTLOCK_CONFIG, then config.yaml in the working directory. Without
any of them, status, history, pause, resume and backfill read the SLOTLOCK_* variables
alone (SLOTLOCK_REDIS__NODES=host:port,... names the fleet's Redis nodes) and act on the
jobs the fleet's replicas publish.
`)
}

// flags is a FlagSet that accepts flags before and after positional
// arguments (slotlock next JOB -n 3).
type flags struct {
	*flag.FlagSet
	config *string
}

func newFlags(name string, env cmdEnv) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	f := &flags{FlagSet: fs}
	f.config = fs.String("config", "", "configuration file (default $SLOTLOCK_CONFIG, then config.yaml)")
	return f
}

// parse parses args and returns the positional arguments.
func (f *flags) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			return nil, err
		}
		args = f.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseNone parses args for a command that takes no positional argument.
// false means a usage error, already printed (exit 2).
func (f *flags) parseNone(args []string, env cmdEnv) bool {
	pos, err := f.parse(args)
	if err != nil {
		return false
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "slotlock %s: unexpected argument %q\n", f.Name(), pos[0])
		return false
	}
	return true
}

// configPath applies the contract's default order.
func (f *flags) configPath(env cmdEnv) string {
	if *f.config != "" {
		return *f.config
	}
	if p := env.getenv("SLOTLOCK_CONFIG"); p != "" {
		return p
	}
	return defaultConfigPath
}
