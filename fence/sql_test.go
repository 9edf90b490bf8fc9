package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/slotlock/slotlock/fence"
)

// sqlSetup makes the fence table and a data table of the test's own.
func sqlSetup(t *testing.T, g fence.SQL, data string) *sql.DB {
	t.Helper()
	db := postgres(t)
	ctx := context.Background()
	if err := g.CreateTable(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := g.CreateTable(ctx, db); err != nil {
		t.Fatalf("CreateTable twice: %v", err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE `+data+` (id int PRIMARY KEY, body text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func upsert(table string, body string) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO `+table+` (id, body) VALUES (1, $1)
ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body`, body)
		return err
	}
}

func bodyOf(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	var b string
	if err := db.QueryRow(`SELECT body FROM ` + table + ` WHERE id = 1`).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSQLRefusesLowerToken(t *testing.T) {
	g := fence.SQL{}
	db := sqlSetup(t, g, "report_a")
	ctx := context.Background()
	if err := g.Exec(ctx, db, "report_a", 5, upsert("report_a", "run 5")); err != nil {
		t.Fatal(err)
	}
	called := false
	err := g.Exec(ctx, db, "report_a", 4, func(*sql.Tx) error { called = true; return nil })
	wantStale(t, err, "report_a", 4, 5)
	if called {
		t.Fatal("the write of a stale token was called")
	}
	if err := g.Exec(ctx, db, "report_a", 5, upsert("report_a", "run 5 again")); err != nil {
		t.Fatalf("equal token: %v", err)
	}
	if err := g.Exec(ctx, db, "report_a", 6, upsert("report_a", "run 6")); err != nil {
		t.Fatal(err)
	}
	if b := bodyOf(t, db, "report_a"); b != "run 6" {
		t.Fatalf("body = %q, want run 6", b)
	}
	// Another resource has a fence of its own.
	if err := g.Exec(ctx, db, "report_b", 1, func(*sql.Tx) error { return nil }); err != nil {
		t.Fatalf("resource report_b, token 1: %v", err)
	}
}

// A failed write rolls the fence back with it: the token was not used.
func TestSQLFailedWriteRollsBackFence(t *testing.T) {
	g := fence.SQL{Table: "public.fence_rollback"}
	db := sqlSetup(t, g, "report_rb")
	ctx := context.Background()
	if err := g.Exec(ctx, db, "r", 3, upsert("report_rb", "run 3")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := g.Exec(ctx, db, "r", 9, func(*sql.Tx) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the write's", err)
	}
	if err := g.Exec(ctx, db, "r", 4, upsert("report_rb", "run 4")); err != nil {
		t.Fatalf("token 4 after a failed write with 9: %v (the fence kept 9)", err)
	}
	if b := bodyOf(t, db, "report_rb"); b != "run 4" {
		t.Fatalf("body = %q", b)
	}
}

// A stale writer that comes while a newer one holds the fence row waits,
// then is refused; a newer one that comes while an older one holds it
// waits, then writes after it. Writes of a resource land in token order.
func TestSQLConcurrentTransactionsOrderByToken(t *testing.T) {
	g := fence.SQL{Table: "fence_conc"}
	db := sqlSetup(t, g, "report_c")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name          string
		first, second uint64
		wantStale     bool
		wantBody      string
	}{
		{"stale second waits then refused", 20, 19, true, "run 20"},
		{"newer second waits then wins", 21, 22, false, "run 22"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if err := g.Guard(ctx, tx, "c", tc.first); err != nil {
				t.Fatal(err)
			}
			if err := upsert("report_c", "run "+itoa(tc.first))(tx); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- g.Exec(ctx, db, "c", tc.second, upsert("report_c", "run "+itoa(tc.second))) }()
			waitForLockWaiter(t, ctx, db)
			select {
			case err := <-done:
				t.Fatalf("second writer finished (%v) while the first held the fence row", err)
			default:
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			err = <-done
			if tc.wantStale {
				wantStale(t, err, "c", tc.second, tc.first)
			} else if err != nil {
				t.Fatal(err)
			}
			if b := bodyOf(t, db, "report_c"); b != tc.wantBody {
				t.Fatalf("body = %q, want %q", b, tc.wantBody)
			}
		})
	}
}

// waitForLockWaiter waits until a session of the database waits on a row
// lock (the second writer, blocked on the fence row).
func waitForLockWaiter(t *testing.T, ctx context.Context, db *sql.DB) {
	t.Helper()
	for {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no session ever waited for the fence row")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestSQLRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	db := postgres(t)
	for _, table := range []string{"x; DROP TABLE y", "a.b.c", "1abc", `"quoted"`} {
		if err := (fence.SQL{Table: table}).CreateTable(ctx, db); err == nil {
			t.Errorf("Table %q accepted", table)
		}
	}
	if err := (fence.SQL{}).CreateTable(ctx, db); err != nil {
		t.Fatal(err)
	}
	err := fence.SQL{}.Exec(ctx, db, "big", math.MaxInt64+1, func(*sql.Tx) error { return nil })
	if err == nil || errors.Is(err, fence.ErrStale) {
		t.Fatalf("token above bigint: err = %v, want a clear error", err)
	}
	if err := (fence.SQL{}).Exec(ctx, db, "", 1, func(*sql.Tx) error { return nil }); err == nil {
		t.Fatal("empty resource accepted")
	}
}

func itoa(u uint64) string { return strconv.FormatUint(u, 10) }
