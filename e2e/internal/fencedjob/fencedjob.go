//go:build unix

// Package fencedjob is the e2e suite's plugin "fenced": a job that works
// for a while and then writes one effect through a fence guard, with the
// run's fencing token, so the suite can freeze a replica mid-run and see
// the guard refuse the woken run's write. Like ledgerjob it writes a start
// and an end line to the ledger, so the suite's checker judges its runs
// too.
//
//	plugin: fenced
//	params:
//	  ledger: /path/ledger.jsonl
//	  work: 2s                 # before the write
//	  store: redis | postgres | http
//	  addr: 127.0.0.1:PORT     # redis: the data's Redis; the stream is "{effects}:log"
//	  dsn: postgres://...      # postgres: the table effects (id serial, token, run_id, replica), resource "effects"
//	  url: http://...          # http: a receiver behind fence.HTTP, called by slotlock's own http plugin
//
// The job models the worst case: its work does not look at ctx, and its
// write is made with a context that the run's cancel does not abort (the
// write of a process frozen mid-run is already on its way when it wakes).
// A well-behaved job checks ctx before it writes; the guard is what holds
// when that is too late. The write's error is returned as is: a refusal
// wraps fence.ErrStale, which slotlock records as error class stale_token.
package fencedjob

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the postgres store's driver
	"github.com/redis/go-redis/v9"

	"github.com/slotlock/slotlock/e2e/internal/ledger"
	"github.com/slotlock/slotlock/fence"
	"github.com/slotlock/slotlock/jobs"
)

func init() { jobs.Register("fenced", newJob) }

// Stream is the Redis stream the redis store appends to; Table the
// PostgreSQL table the postgres store inserts into, under the fence
// resource of the same name.
const (
	Stream = "{effects}:log"
	Table  = "effects"
)

type params struct {
	Ledger string        `yaml:"ledger"`
	Work   time.Duration `yaml:"work"`
	Store  string        `yaml:"store"`
	Addr   string        `yaml:"addr"`
	DSN    string        `yaml:"dsn"`
	URL    string        `yaml:"url"`
}

type job struct {
	p     params
	write func(ctx context.Context, run jobs.Run) error
}

func newJob(raw map[string]any) (jobs.Job, error) {
	var p params
	if err := jobs.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Ledger == "" {
		return nil, errors.New("ledger: required")
	}
	j := &job{p: p}
	switch p.Store {
	case "redis":
		g := fence.Redis{Client: redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})}
		j.write = func(ctx context.Context, run jobs.Run) error {
			_, err := g.XAdd(ctx, Stream, run.FencingToken, "token", run.FencingToken, "run_id", run.RunID, "replica", run.Replica)
			return err
		}
	case "postgres":
		db, err := sql.Open("pgx", p.DSN)
		if err != nil {
			return nil, fmt.Errorf("dsn: %w", err)
		}
		g := fence.SQL{}
		j.write = func(ctx context.Context, run jobs.Run) error {
			return g.Exec(ctx, db, Table, run.FencingToken, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO `+Table+` (token, run_id, replica) VALUES ($1, $2, $3)`,
					int64(run.FencingToken), run.RunID, run.Replica)
				return err
			})
		}
	case "http":
		factory, _ := jobs.Lookup("http")
		hj, err := factory(map[string]any{"url": p.URL, "timeout": "5s"})
		if err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
		j.write = hj.Run
	default:
		return nil, fmt.Errorf("store: %q, want redis, postgres or http", p.Store)
	}
	return j, nil
}

func (j *job) Run(ctx context.Context, run jobs.Run) error {
	l := ledger.Line{Job: run.Job, Slot: run.SlotString(), Replica: run.Replica,
		Token: strconv.FormatUint(run.FencingToken, 10), RunID: run.RunID,
		Attempt: strconv.Itoa(run.Attempt), PID: os.Getpid(), Ev: "start"}
	if err := ledger.Append(j.p.Ledger, l); err != nil {
		return err
	}
	time.Sleep(j.p.Work) // the work: deaf to ctx, as a frozen process is
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	err := j.write(wctx, run)
	cancel()
	l.Ev, l.Outcome = "end", "ok"
	switch {
	case err == nil:
	case ctx.Err() != nil:
		l.Outcome = "canceled"
	default:
		l.Outcome = "failed"
	}
	if lerr := ledger.Append(j.p.Ledger, l); lerr != nil {
		return errors.Join(err, lerr)
	}
	return err
}
