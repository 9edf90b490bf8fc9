package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"regexp"
)

// SQL guards writes to a SQL database (PostgreSQL) through database/sql,
// with any driver: a fence table keeps one row per resource with the
// highest token accepted for it, and a write is done in the transaction
// that raises that row, after it. The guard statement is one upsert:
//
//	INSERT INTO slotlock_fence AS f (resource, token) VALUES ($1, $2)
//	ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token
//	WHERE f.token <= EXCLUDED.token
//	RETURNING f.token
//
// No row back means a higher token is already there: the transaction is
// rolled back and the guard returns a *StaleError. Otherwise the row stays
// locked until the transaction ends, so a concurrent writer of the same
// resource waits for it and then sees its token (under READ COMMITTED, the
// default, PostgreSQL re-checks the WHERE on the row it waited for): writes
// of one resource are applied in token order, and none lower than one
// already committed.
//
// Tokens are stored as bigint: a token above math.MaxInt64 is refused
// (slotlock's tokens count runs from 1 and never get there).
//
// The zero value uses the table slotlock_fence. An SQL is safe for
// concurrent use.
type SQL struct {
	// Table is the fence table's name, optionally schema-qualified
	// ("ops.fence"); default "slotlock_fence". It is part of the SQL text,
	// so only letters, digits, '_' and one '.' are allowed.
	Table string
	// TxOptions are the options of the transactions Exec begins; nil is
	// the database's default (READ COMMITTED on PostgreSQL).
	TxOptions *sql.TxOptions
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

func (g SQL) table() (string, error) {
	t := g.Table
	if t == "" {
		t = "slotlock_fence"
	}
	if !tableName.MatchString(t) {
		return "", fmt.Errorf("fence: SQL.Table %q: want an identifier, optionally schema-qualified (letters, digits, _)", t)
	}
	return t, nil
}

// Execer runs a statement: *sql.DB, *sql.Conn and *sql.Tx are Execers.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Queryer runs a query returning a row: *sql.Tx (and *sql.Conn, *sql.DB,
// though the guard only means something in the write's transaction).
type Queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// TxBeginner starts a transaction: *sql.DB and *sql.Conn are TxBeginners.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// CreateTable creates the fence table if it does not exist. Run it once,
// e.g. in a migration; the statement it runs is in the package
// documentation.
func (g SQL) CreateTable(ctx context.Context, db Execer) error {
	t, err := g.table()
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+t+` (
	resource text PRIMARY KEY,
	token bigint NOT NULL CHECK (token >= 0)
)`)
	if err != nil {
		return fmt.Errorf("fence: create table %s: %w", t, err)
	}
	return nil
}

// Exec runs write in a new transaction of db, after the guard statement
// raised resource's fence to token, and commits. It returns a *StaleError
// (errors.Is ErrStale) without calling write when a higher token was
// already accepted for resource, and rolls back when write fails.
func (g SQL) Exec(ctx context.Context, db TxBeginner, resource string, token uint64, write func(*sql.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, g.TxOptions)
	if err != nil {
		return fmt.Errorf("fence: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := g.Guard(ctx, tx, resource, token); err != nil {
		return err
	}
	if err := write(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fence: commit: %w", err)
	}
	return nil
}

// Guard runs the guard statement in tx, the caller's transaction: it raises
// resource's fence to token and locks its row until tx ends, or returns a
// *StaleError when a higher token was already accepted (then the caller
// must roll tx back). Call it before the transaction's writes.
func (g SQL) Guard(ctx context.Context, tx Queryer, resource string, token uint64) error {
	t, err := g.table()
	if err != nil {
		return err
	}
	if resource == "" {
		return errors.New("fence: empty resource")
	}
	if token > math.MaxInt64 {
		return fmt.Errorf("fence: token %d is above the largest bigint", token)
	}
	var got int64
	err = tx.QueryRowContext(ctx, `INSERT INTO `+t+` AS f (resource, token) VALUES ($1, $2)
ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token
WHERE f.token <= EXCLUDED.token
RETURNING f.token`, resource, int64(token)).Scan(&got)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return g.stale(ctx, tx, t, resource, token)
	case err != nil:
		return fmt.Errorf("fence: guard %q in %s: %w", resource, t, err)
	}
	return nil
}

// stale reads the highest token for the error. The row was locked by the
// refused upsert, so this sees the committed value that refused it.
func (g SQL) stale(ctx context.Context, tx Queryer, table, resource string, token uint64) error {
	var highest int64
	if err := tx.QueryRowContext(ctx, `SELECT token FROM `+table+` WHERE resource = $1`, resource).Scan(&highest); err != nil {
		return fmt.Errorf("fence: guard %q in %s: refused, and reading the highest token failed: %w", resource, table, errors.Join(ErrStale, err))
	}
	return &StaleError{Resource: resource, Token: token, Highest: uint64(highest)}
}
