// Package greet is an example slotlock plugin: it writes a greeting, with
// the run's slot and fencing token, to a file. Importing it registers the
// plugin "greet", exactly as the built-in plugins register themselves.
//
// A job using it:
//
//	jobs:
//	  - name: hello
//	    schedule: "*/10 * * * * *"
//	    plugin: greet
//	    params:
//	      to: world
//	      file: /tmp/greetings.txt
package greet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/slotlock/slotlock/jobs"
)

func init() { jobs.Register("greet", newGreeter) }

// params are the plugin's own settings. DecodeParams rejects unknown keys,
// so a typo in the YAML is a configuration error, not a silent default.
type params struct {
	To   string `yaml:"to"`
	File string `yaml:"file"`
}

type greeter struct{ p params }

// newGreeter is the Factory: it validates everything it can at load time
// (so `slotlock validate` catches it) and starts nothing.
func newGreeter(raw map[string]any) (jobs.Job, error) {
	p := params{To: "world"}
	if err := jobs.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.File == "" {
		return nil, errors.New("file: required")
	}
	if strings.TrimSpace(p.To) == "" {
		return nil, errors.New("to: must not be blank")
	}
	return &greeter{p: p}, nil
}

// Run is called once per attempt. It honours ctx (canceled on timeout,
// lock loss or shutdown) and reports failure by returning an error.
func (g *greeter) Run(ctx context.Context, run jobs.Run) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	f, err := os.OpenFile(g.p.File, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	// The fencing token lets a downstream store refuse a stale writer.
	_, err = fmt.Fprintf(f, "hello, %s: job=%s slot=%s token=%d attempt=%d replica=%s\n",
		g.p.To, run.Job, run.SlotString(), run.FencingToken, run.Attempt, run.Replica)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	run.Log().Info("greeted", "to", g.p.To)
	return err
}
