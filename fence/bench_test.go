package fence_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/slotlock/slotlock/fence"
)

// What a guard costs: each guarded write against the same write unguarded,
// in the same run, on the same server (docs/exactly-once-effects.md has the
// figures):
//
//	flock /tmp/slotlock-heavy.lock go test -run '^$' -bench . -benchtime 2000x -count 5 ./fence

// benchToken hands out ever higher tokens across the benchmarks' rounds,
// so no guarded write is refused (each round starts its loop at 0).
var benchToken atomic.Uint64

func BenchmarkRedis(b *testing.B) {
	c := redisClient(b)
	g := fence.Redis{Client: c}
	ctx := context.Background()
	b.Run("SET/plain", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := c.Set(ctx, "{bench}:set", i, 0).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SET/guarded", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := g.Set(ctx, "{bench}:gset", benchToken.Add(1), i, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("HSET/plain", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := c.HSet(ctx, "{bench}:hset", "n", i, "by", "run").Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("HSET/guarded", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := g.HSet(ctx, "{bench}:ghset", benchToken.Add(1), "n", i, "by", "run"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("XADD/plain", func(b *testing.B) {
		c.Del(ctx, "{bench}:xadd")
		for i := 0; b.Loop(); i++ {
			if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "{bench}:xadd", Values: []any{"n", i}}).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("XADD/guarded", func(b *testing.B) {
		c.Del(ctx, "{bench}:gxadd")
		for i := 0; b.Loop(); i++ {
			if _, err := g.XAdd(ctx, "{bench}:gxadd", benchToken.Add(1), "n", i); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSQL(b *testing.B) {
	db := postgres(b)
	ctx := context.Background()
	g := fence.SQL{Table: "fence_bench"}
	if err := g.CreateTable(ctx, db); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS bench_data (id int PRIMARY KEY, n bigint NOT NULL);
INSERT INTO bench_data VALUES (1, 0) ON CONFLICT DO NOTHING`); err != nil {
		b.Fatal(err)
	}
	update := func(i int) func(*sql.Tx) error {
		return func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE bench_data SET n = $1 WHERE id = 1`, i)
			return err
		}
	}
	b.Run("update/plain", func(b *testing.B) { // autocommit: the write alone
		for i := 0; b.Loop(); i++ {
			if _, err := db.ExecContext(ctx, `UPDATE bench_data SET n = $1 WHERE id = 1`, i); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tx/plain", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := update(i)(tx); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tx/guarded", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := g.Exec(ctx, db, "bench", benchToken.Add(1), update(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkHTTP(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	serve := func(b *testing.B, h http.Handler) {
		req := httptest.NewRequest(http.MethodPost, "/hook", nil)
		req.Header.Set(fence.HeaderJob, "bench")
		for b.Loop() {
			req.Header.Set(fence.HeaderToken, strconv.FormatUint(benchToken.Add(1), 10))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	}
	b.Run("plain", func(b *testing.B) { serve(b, ok) })
	b.Run("guarded/memory", func(b *testing.B) { serve(b, fence.HTTP{}.Wrap(ok)) })
	b.Run("guarded/redis", func(b *testing.B) {
		store := fence.Redis{Client: redisClient(b)}
		serve(b, fence.HTTP{Store: store}.Wrap(ok))
	})
}
