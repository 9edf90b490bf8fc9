package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/slotlock/slotlock/fence"
	"github.com/slotlock/slotlock/jobs"
)

// dailyReport is a Go plugin's job: it writes its result to Redis with the
// run's token.
type dailyReport struct{ guard fence.Redis }

func (j dailyReport) Run(ctx context.Context, run jobs.Run) error {
	report := fmt.Sprintf("report of %s by run %s", run.SlotString(), run.RunID)
	// A run frozen past its lease that wakes after a newer run wrote gets
	// ErrStale here and writes nothing; returning the error makes slotlock
	// record run.failed with error_class stale_token.
	return j.guard.Set(ctx, "{report:daily}:latest", run.FencingToken, report, 0)
}

func ExampleRedis_Set() {
	client := redis.NewClient(&redis.Options{Addr: "cache.internal:6380"})
	jobs.Register("daily-report", func(map[string]any) (jobs.Job, error) {
		return dailyReport{guard: fence.Redis{Client: client}}, nil
	})
}

// A stream of events, one entry per run, never one from a stale run after a
// newer run's entry.
func ExampleRedis_XAdd() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	guard := fence.Redis{Client: client}
	ctx := context.Background()
	var token uint64 = 42 // jobs.Run.FencingToken
	id, err := guard.XAdd(ctx, "{billing}:invoices", token, "customer", "c-17", "amount", "120.00")
	if errors.Is(err, fence.ErrStale) {
		return // a newer run already wrote: nothing was added
	}
	_ = id
}

// A guarded transaction on PostgreSQL: the fence row of "daily-report" is
// raised to the token and the write made in one transaction, or neither.
func ExampleSQL_Exec() {
	db, err := sql.Open("pgx", "postgres://app@db.internal/app")
	if err != nil {
		return
	}
	ctx := context.Background()
	guard := fence.SQL{} // table slotlock_fence
	if err := guard.CreateTable(ctx, db); err != nil {
		return
	}
	var token uint64 = 42 // jobs.Run.FencingToken
	err = guard.Exec(ctx, db, "daily-report", token, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE reports SET body = $1, token = $2 WHERE name = 'daily'`, "...", int64(token))
		return err
	})
	if errors.Is(err, fence.ErrStale) {
		fmt.Println("a newer run already wrote the report")
	}
}

// A service receiving slotlock's http plugin's calls refuses a stale
// caller with 409. Here two runs of the job "nightly" call it: token 8
// first, then the late token 7.
func ExampleHTTP() {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rebuild", func(w http.ResponseWriter, r *http.Request) {
		a, _ := fence.FromContext(r.Context())
		fmt.Printf("rebuilding for %s, token %d\n", a.Job, a.Token)
	})
	guarded := fence.HTTP{ // Store nil: in memory, for one instance
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}.Wrap(mux)
	srv := httptest.NewServer(guarded)
	defer srv.Close()

	for _, token := range []uint64{8, 7} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/rebuild", nil)
		req.Header.Set(fence.HeaderJob, "nightly")
		req.Header.Set(fence.HeaderToken, strconv.FormatUint(token, 10))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(token, resp.Status, "highest:"+resp.Header.Get(fence.HeaderTokenHighest))
	}
	// Output:
	// rebuilding for nightly, token 8
	// 8 200 OK highest:
	// 7 409 Conflict highest:8
}

// Every guard's refusal is a *StaleError, errors.Is ErrStale.
func ExampleStaleError() {
	var store fence.Memory
	ctx := context.Background()
	_ = store.Advance(ctx, "report", 8)
	err := store.Advance(ctx, "report", 7)

	var stale *fence.StaleError
	fmt.Println(errors.Is(err, fence.ErrStale), errors.As(err, &stale) && stale.Highest == 8)
	fmt.Println(err)
	// Output:
	// true true
	// fence: stale fencing token 7 for "report": token 8 was already accepted (a newer run wrote first)
}
