package fence_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/slotlock/slotlock/fence/pgtest"
	"github.com/slotlock/slotlock/locking/redistest"
)

// One redis-server and one PostgreSQL serve the package's tests; each test
// uses keys and resources of its own. They start on first use and stop in
// TestMain.
var shared struct {
	redisOnce sync.Once
	redis     *redistest.Cluster
	redisErr  error

	pgOnce sync.Once
	pg     *pgtest.Server
	db     *sql.DB
	pgErr  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.redis != nil {
		_ = shared.redis.Close()
	}
	if shared.db != nil {
		_ = shared.db.Close()
	}
	if shared.pg != nil {
		_ = shared.pg.Close()
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: goroutines left running after the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// redisNode returns the shared redis-server, skipping the test when
// redis-server is not installed.
func redisNode(t testing.TB) *redistest.Node {
	t.Helper()
	shared.redisOnce.Do(func() { shared.redis, shared.redisErr = redistest.New(1) })
	if errors.Is(shared.redisErr, redistest.ErrNoServer) {
		t.Skip(shared.redisErr)
	}
	if shared.redisErr != nil {
		t.Fatal(shared.redisErr)
	}
	return shared.redis.Node(0)
}

// redisClient is a client of the shared redis-server.
func redisClient(t testing.TB) *redis.Client { return redisNode(t).Client() }

// postgres returns a pool to the shared PostgreSQL.
func postgres(t testing.TB) *sql.DB {
	t.Helper()
	shared.pgOnce.Do(func() {
		shared.pg, shared.pgErr = pgtest.New()
		if shared.pgErr == nil {
			shared.db, shared.pgErr = sql.Open("pgx", shared.pg.DSN())
		}
	})
	if shared.pgErr != nil {
		pgtest.Unavailable(t, shared.pgErr)
	}
	return shared.db
}
