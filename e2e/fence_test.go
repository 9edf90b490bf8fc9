//go:build linux

package e2e

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotlock/slotlock/e2e/internal/fencedjob"
	"github.com/slotlock/slotlock/fence"
	"github.com/slotlock/slotlock/fence/pgtest"
	"github.com/slotlock/slotlock/locking/redistest"
)

// Exactly-once effects (issue 26): a replica is frozen (SIGSTOP) in the
// middle of a run, before its write, for longer than its lease; another
// replica runs the next slot and writes; the frozen replica wakes and its
// run makes its write. The guard refuses it: the run ends run.failed with
// error_class stale_token (or run.canceled lock_lost, when the watchdog
// saw the lost lease first, with the refusal as its error), and the data
// holds only the newer runs' writes, in token order. Once per guard.

// effect is one accepted write, as the data store holds it.
type effect struct {
	Token uint64
	RunID string
}

func TestFencedWrites(t *testing.T) {
	requireSuite(t)
	for _, store := range []string{"redis", "postgres", "http"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			params, effects := fencedStore(t, store)
			scenarioFencedWrite(t, store, params, effects)
		})
	}
}

// fencedStore starts the data side of a guard and returns the fenced
// plugin's params for it and a reader of the accepted writes in the order
// they were made.
func fencedStore(t *testing.T, store string) (map[string]any, func() []effect) {
	switch store {
	case "redis":
		data := redistest.Start(t, 1)
		return map[string]any{"store": "redis", "addr": data.Addrs()[0]}, func() []effect {
			entries, err := data.Node(0).Client().XRange(context.Background(), fencedjob.Stream, "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			var out []effect
			for _, e := range entries {
				tok, _ := strconv.ParseUint(str(e.Values["token"]), 10, 64)
				out = append(out, effect{Token: tok, RunID: str(e.Values["run_id"])})
			}
			return out
		}
	case "postgres":
		srv := pgtest.Start(t)
		db, err := sql.Open("pgx", srv.DSN())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		ctx := context.Background()
		if err := (fence.SQL{}).CreateTable(ctx, db); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `CREATE TABLE `+fencedjob.Table+` (id serial PRIMARY KEY, token bigint NOT NULL, run_id text NOT NULL, replica text NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"store": "postgres", "dsn": srv.DSN()}, func() []effect {
			rows, err := db.Query(`SELECT token, run_id FROM ` + fencedjob.Table + ` ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var out []effect
			for rows.Next() {
				var e effect
				if err := rows.Scan(&e.Token, &e.RunID); err != nil {
					t.Fatal(err)
				}
				out = append(out, e)
			}
			return out
		}
	default: // http: a receiver behind the middleware, called by slotlock's http plugin
		var mu sync.Mutex
		var got []effect
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		recv := httptest.NewServer(fence.HTTP{Logger: quiet}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a, _ := fence.FromContext(r.Context())
			mu.Lock()
			got = append(got, effect{Token: a.Token, RunID: r.Header.Get(fence.HeaderRunID)})
			mu.Unlock()
		})))
		t.Cleanup(recv.Close)
		return map[string]any{"store": "http", "url": recv.URL}, func() []effect {
			mu.Lock()
			defer mu.Unlock()
			return append([]effect(nil), got...)
		}
	}
}

func scenarioFencedWrite(t *testing.T, store string, params map[string]any, effects func() []effect) {
	const work = 2 * time.Second
	params["work"] = work.String()
	job := JobDef{Name: "effect", Schedule: "* * * * * *", Forbid: true, Plugin: "fenced", Params: params}
	b := bins
	b.Slotlock = bins.Fenced
	c := NewCluster(t, b, Spec{ProxyNode: -1, Jobs: []JobDef{job}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)

	// Freeze a run early in its work, so its write comes after the wake.
	var stale Run
	for deadline := time.Now().Add(15 * time.Second); ; {
		stale = c.WaitOpenRun("effect", 10*time.Second)
		if time.Since(stale.Start) < work/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run of effect caught early in its %v of work", work)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Past the lease (TTL), then long enough for the next run to start
	// on another replica (a slot each second), work and write — and on
	// until such a newer run has succeeded, if a loaded host made its
	// write slower (a CI run once saw a 6 s POST): the overlap is what
	// the scenario is about.
	newerSucceeded := func() bool {
		for _, r := range c.Runs() {
			if r.Token > stale.Token && r.Outcome == "ok" {
				return true
			}
		}
		return false
	}
	f := c.Replica(stale.Replica).FreezeUntil(2*c.spec.TTL+work+time.Second, 2*c.spec.TTL+work+15*time.Second, newerSucceeded)
	c.Faults.Legit(c.Faults.Start(f.From), f.To.Add(c.spec.TTL+time.Second), "replica "+stale.Replica+" frozen")
	to := time.Now().Add(4 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)

	runs := c.Runs()
	var got *Run
	newerDuringFreeze := false
	for i, r := range runs {
		if r.RunID == stale.RunID {
			got = &runs[i]
		}
		if r.Token > stale.Token && r.Outcome == "ok" && r.End.Before(f.To) {
			newerDuringFreeze = true
		}
	}
	switch {
	case got == nil || got.End.IsZero():
		t.Fatalf("stale run %s has no end in the ledger", stale.RunID)
	case !got.Start.Add(work).After(f.From) || got.End.Before(f.To.Add(-time.Second)):
		// f.To is stamped once the thaw returned; the job may end a
		// moment before that, never a second.
		t.Fatalf("stale run %s (start %s, end %s) did not write after its replica woke (frozen %s..%s): the freeze missed its write",
			stale.RunID, stamp(got.Start), stamp(got.End), stamp(f.From), stamp(f.To))
	case got.Outcome != "failed" && got.Outcome != "canceled":
		t.Errorf("stale run %s ended %q; want failed (its write refused) or canceled", stale.RunID, got.Outcome)
	}
	if !newerDuringFreeze {
		t.Errorf("no run with a token above %d succeeded while %s was frozen: the scenario did not make the overlap it is about", stale.Token, stale.Replica)
	}

	// The audit log: the refusal, as the job saw it.
	reported := ""
	for _, e := range c.Events() {
		if e.RunID != stale.RunID || e.Replica != stale.Replica {
			continue
		}
		switch {
		case e.Event == "run.failed" && e.ErrorClass == fence.ErrorClass && strings.Contains(e.Error, "stale fencing token"):
			reported = "run.failed error_class " + e.ErrorClass
		case e.Event == "run.canceled" && e.Reason == "lock_lost" && strings.Contains(e.Error, "stale fencing token"):
			reported = "run.canceled lock_lost, error " + e.Error
		}
	}
	if reported == "" {
		t.Errorf("stale run %s on %s: no run.failed with error_class stale_token, nor run.canceled lock_lost with the refusal; its events: %v",
			stale.RunID, stale.Replica, eventsOfRun(c.Events(), stale.RunID))
	}

	// The data: only newer writes, in token order.
	list := effects()
	var last uint64
	newer := 0
	for _, e := range list {
		if e.RunID == stale.RunID {
			t.Errorf("the stale run %s's write (token %d) is in the data: %v", stale.RunID, e.Token, list)
		}
		if e.Token < last {
			t.Errorf("token %d written after %d: %v", e.Token, last, list)
		}
		last = e.Token
		if e.Token > stale.Token {
			newer++
		}
	}
	if newer == 0 {
		t.Errorf("no write with a token above the stale %d in the data: %v", stale.Token, list)
	}
	t.Logf("%s: run %s (token %d) frozen on %s %s..%s, woke and was refused (%s); %d accepted writes, %d of them newer",
		store, stale.RunID, stale.Token, stale.Replica, stamp(f.From), stamp(f.To), reported, len(list), newer)
}

func eventsOfRun(evs []Event, runID string) []string {
	var out []string
	for _, e := range evs {
		if e.RunID == runID {
			out = append(out, e.Event+" "+e.Reason+" "+e.ErrorClass+" "+e.Error)
		}
	}
	return out
}
