package fence_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/fence"
	"github.com/slotlock/slotlock/jobs"
)

// The shell recipes of examples/fenced-exec, run as slotlock exec jobs
// (the exec plugin sets SLOTLOCK_FENCING_TOKEN): a run with token 8 writes,
// a later one with token 7 (a stale run) is refused, fails, and leaves the
// data as token 8 wrote it.

// execRun runs the recipe as an exec job with token and returns its
// error and what it wrote on stderr (the error carries the tail).
func execRun(t *testing.T, script string, env map[string]any, token uint64) error {
	t.Helper()
	factory, _ := jobs.Lookup("exec")
	abs, err := filepath.Abs(filepath.Join("..", "examples", "fenced-exec", script))
	if err != nil {
		t.Fatal(err)
	}
	job, err := factory(map[string]any{"command": []any{"sh", abs}, "env": env})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return job.Run(ctx, jobs.Run{Job: "report", Slot: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC),
		RunID: "run-" + strconv.FormatUint(token, 10), Replica: "r1", FencingToken: token, Attempt: 1, Logger: quiet})
}

func TestRecipeRedisCLI(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli not on PATH (apt-get install -y redis-tools)")
	}
	node := redisNode(t)
	guard, _ := filepath.Abs("redis_guard.lua")
	for _, key := range []string{"{recipe}:latest", "recipe-untagged"} {
		env := func(v string) map[string]any {
			return map[string]any{"REDIS_URL": "redis://" + node.Addr(), "KEY": key, "VALUE": v, "GUARD": guard}
		}
		if err := execRun(t, "redis-set.sh", env("by run 8"), 8); err != nil {
			t.Fatalf("%s, token 8: %v", key, err)
		}
		err := execRun(t, "redis-set.sh", env("by run 7"), 7)
		if err == nil || !strings.Contains(err.Error(), "stale fencing token 7") || !strings.Contains(err.Error(), "75") {
			t.Fatalf("%s, token 7 after 8: err = %v; want exit 75 and the stale message", key, err)
		}
		if c := errorClass(err); c != fence.ErrorClass {
			t.Fatalf("%s, token 7 after 8: error class %q, want %s (what history records)", key, c, fence.ErrorClass)
		}
		ctx := context.Background()
		fk, _ := fence.FenceKey(key)
		if v, f := node.Client().Get(ctx, key).Val(), node.Client().Get(ctx, fk).Val(); v != "by run 8" || f != "8" {
			t.Fatalf("%s = %q, fence %s = %q; want run 8's value and 8", key, v, fk, f)
		}
	}
}

func TestRecipePsql(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Skip("psql not on PATH (apt-get install -y postgresql-client)")
	}
	db := postgres(t)
	ctx := context.Background()
	if err := (fence.SQL{}).CreateTable(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE reports (name text PRIMARY KEY, body text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	env := func(body string) map[string]any {
		return map[string]any{"DATABASE_URL": shared.pg.DSN(), "RESOURCE": "recipe-report", "BODY": body}
	}
	if err := execRun(t, "psql-write.sh", env("by run 8"), 8); err != nil {
		t.Fatalf("token 8: %v", err)
	}
	err := execRun(t, "psql-write.sh", env("by run 7"), 7)
	if err == nil || !strings.Contains(err.Error(), "code 75") || !strings.Contains(err.Error(), "stale fencing token") {
		t.Fatalf("token 7 after 8: err = %v; want exit 75 saying stale fencing token", err)
	}
	if c := errorClass(err); c != fence.ErrorClass {
		t.Fatalf("token 7 after 8: error class %q, want %s", c, fence.ErrorClass)
	}
	// Any other failure (here: no server) keeps psql's own code and is no refusal.
	if err := execRun(t, "psql-write.sh", map[string]any{"DATABASE_URL": "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable", "RESOURCE": "r", "BODY": "b"}, 9); err == nil || errorClass(err) == fence.ErrorClass {
		t.Fatalf("a failed connection: err = %v, class %q; want a failure that is not stale_token", err, errorClass(err))
	}
	var body string
	var token int64
	if err := db.QueryRowContext(ctx, `SELECT r.body, f.token FROM reports r JOIN slotlock_fence f ON f.resource = r.name
WHERE r.name = 'recipe-report'`).Scan(&body, &token); err != nil {
		t.Fatal(err)
	}
	if body != "by run 8" || token != 8 {
		t.Fatalf("report %q with fence %d; want run 8's and 8", body, token)
	}
}

// errorClass is the class an error gives itself, as slotlock's history
// reads it.
func errorClass(err error) string {
	var c interface{ ErrorClass() string }
	if errors.As(err, &c) {
		return c.ErrorClass()
	}
	return ""
}
