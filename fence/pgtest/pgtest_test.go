package pgtest_test

import (
	"context"
	"database/sql"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/slotlock/slotlock/fence/pgtest"
)

// The server answers SQL on its own port, never 5432, and is gone (its
// process and its directory) after Close.
func TestStartServesAndStops(t *testing.T) {
	srv := pgtest.Start(t)
	if srv.Port() == 5432 {
		t.Fatalf("port 5432: the machine's own PostgreSQL port must never be used")
	}
	db, err := sql.Open("pgx", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var port int
	if err := db.QueryRowContext(ctx, "SELECT current_setting('port')::int").Scan(&port); err != nil {
		t.Fatalf("query: %v\n%s", err, srv.Log())
	}
	if port != srv.Port() {
		t.Fatalf("connected to a server on port %d, want the test's own %d", port, srv.Port())
	}
	_ = db.Close()
	pid := srv.PID()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("postgres (pid %d) still running after Close", pid)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
