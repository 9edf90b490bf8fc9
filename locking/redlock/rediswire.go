package redlock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"

	"github.com/redis/go-redis/v9"
)

// The wire form of the node ops: how an Op becomes the Redis command or
// Lua script call a pipeline sends (queueOp), and how its reply becomes a
// Result (reply). The scripts are the .lua files beside this one.

var (
	//go:embed acquire.lua
	acquireLua    string
	acquireScript = newScript(acquireLua)
	//go:embed log.lua
	logLua    string
	logScript = newScript(logLua)
	//go:embed logadd.lua
	logAddLua    string
	logAddScript = newScript(logAddLua)
	//go:embed pause.lua
	pauseLua    string
	pauseScript = newScript(pauseLua)
	//go:embed fence.lua
	fenceLua    string
	fenceScript = newScript(fenceLua)
	//go:embed maxset.lua
	maxsetLua    string
	maxsetScript = newScript(maxsetLua)
	//go:embed extend.lua
	extendLua    string
	extendScript = newScript(extendLua)
	//go:embed release.lua
	releaseLua    string
	releaseScript = newScript(releaseLua)
)

// queueOp adds op to the pipeline p, as its script (EVALSHA, or EVAL when
// eval is set) or command, and returns the command, to read after Exec.
func queueOp(ctx context.Context, p redis.Pipeliner, op driver.Op, eval bool) redis.Cmder {
	if _, a := scriptCall(op, eval); a != nil {
		return queueScript(ctx, p, a)
	}
	return queueCommand(ctx, p, op)
}

// queueScript adds a script call, its argument list built whole.
func queueScript(ctx context.Context, p redis.Pipeliner, a []any) redis.Cmder {
	cmd := redis.NewCmd(ctx, a...)
	_ = p.Process(ctx, cmd)
	return cmd
}

// queueCommand adds op, which is no script call, as its command.
func queueCommand(ctx context.Context, p redis.Pipeliner, op driver.Op) redis.Cmder {
	switch op := op.(type) {
	case driver.ClaimsOp:
		return p.HKeys(ctx, op.Claims)
	case driver.GetOp:
		return p.Get(ctx, op.Key)
	case driver.PingOp:
		return p.Ping(ctx)
	}
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(fmt.Errorf("locking: unknown op %T", op))
	return cmd
}

// scriptCall is op's script and the argument list of its call
// ("EVALSHA sha numkeys keys... args...", EVAL with the source when eval
// is set), or nil, nil when op is a command. A script's arguments are
// built in one list (no key slice, variadic copy or reply closure per
// call); numkeys, a[2], is an int.
func scriptCall(op driver.Op, eval bool) (*luaScript, []any) {
	var a []any
	switch op := op.(type) {
	case driver.AcquireOp:
		return acquireScript, acquireArgs(op, eval)
	case driver.ExtendOp:
		return extendScript, extendArgs(op, eval)
	case driver.ReleaseOp:
		return releaseScript, releaseArgs(op, eval)
	case driver.LogOp:
		a = append(scriptArgs(logScript, eval, 3), op.Key, op.Since, op.Limit)
		a[2] = 1
		return logScript, a
	case driver.LogAddOp:
		fence, absent := op.Key, 0 // unused: stands in, with the call's hash tag
		if op.RecordN != 0 {
			fence = op.Record
		}
		if op.IfAbsent {
			absent = 1
		}
		a = append(scriptArgs(logAddScript, eval, 9), op.Key, fence, op.Entry, op.N, op.Value, op.Keep, op.Floor, op.RecordN, absent)
		a[2] = 2
		return logAddScript, a
	case driver.PauseOp:
		a = append(scriptArgs(pauseScript, eval, 3), op.Key, op.Value, op.N)
		a[2] = 1
		return pauseScript, a
	case driver.FenceOp:
		a = append(scriptArgs(fenceScript, eval, 2), op.Key, op.N)
		a[2] = 1
		return fenceScript, a
	case driver.MaxSetOp:
		a = append(scriptArgs(maxsetScript, eval, 2), op.Key, op.N)
		a[2] = 1
		return maxsetScript, a
	}
	return nil, nil
}

// acquireArgs, extendArgs and releaseArgs are the EVALSHA (EVAL when
// eval) arguments of the lease scripts' calls: keys, their count at
// a[2], then the arguments.
func acquireArgs(op driver.AcquireOp, eval bool) []any {
	a := scriptArgs(acquireScript, eval, 14)
	a = append(a, op.Key, op.Fence)
	if op.Field != "" {
		also := op.Key // unused: stands in, with the call's hash tag
		if op.AlsoValue != "" {
			also = op.Also
		}
		a = append(a, op.Claims, op.Lives, op.Pause, also)
	}
	a = append(a, op.Tomb)
	a[2] = len(a) - 3
	return append(a, op.Value, op.TTL, op.N, op.Field, op.AlsoValue, op.SentMS, op.FreshMS)
}

func extendArgs(op driver.ExtendOp, eval bool) []any {
	a := scriptArgs(extendScript, eval, 9)
	a = append(a, op.Key)
	start := "0"
	if op.Field != "" {
		a = append(a, op.Lives, op.Claims)
		if op.Start {
			start = "1"
		}
	}
	a[2] = len(a) - 3
	return append(a, op.Value, op.TTL, op.Field, start, op.SentMS, op.FreshMS)
}

func releaseArgs(op driver.ReleaseOp, eval bool) []any {
	a := scriptArgs(releaseScript, eval, 18)
	a = append(a, op.Key)
	if op.Field != "" {
		// Unused optional keys stand in as the lock key itself: every
		// key of one call shares its hash tag.
		also, record := op.Key, op.Key
		if op.AlsoValue != "" {
			also = op.Also
		}
		if op.RecordN != 0 {
			record = op.Record
		}
		a = append(a, op.Claims, op.Lives, op.Log, also, record)
	}
	if op.TombTTL > 0 {
		a = append(a, op.Tomb)
	}
	a[2] = len(a) - 3
	taken := "0"
	if op.Taken {
		taken = "1"
	}
	return append(a, op.Value, op.Done, op.DoneTTL, op.Field, op.Entry, op.N, op.Keep, op.AlsoValue, op.RecordN, op.TombTTL, taken)
}

// luaScript is a script's source and SHA1, boxed once for the argument
// lists of its calls, and its batch form (redisfold.go), which runs many
// calls of it in one.
type luaScript struct {
	src, sha any
	fold     *luaScript
}

func newScript(src string) *luaScript {
	plain, fold := src, newFoldScript("", src)
	if strings.Contains(src, "servertime()") {
		plain, fold = serverTime+src, newFoldScript(foldServerTime, src)
	}
	return &luaScript{src: plain, sha: redis.NewScript(plain).Hash(), fold: fold}
}

// serverTime defines servertime(), the node's clock (TIME), for a script
// that reads it (the claim, renewal and end scripts). A plain call reads
// it once; the batch form's (redisfold.go, foldServerTime) reads it once
// per fold.
const serverTime = "local function servertime() return redis.call('TIME') end\n"

// scriptArgs starts the argument list of a call of s ("EVALSHA sha
// numkeys", or EVAL with the source), room for n keys and arguments more;
// the caller sets numkeys (a[2]) once the keys are in.
func scriptArgs(s *luaScript, eval bool, n int) []any {
	a := make([]any, 3, 3+n)
	a[0], a[1] = "evalsha", s.sha
	if eval {
		a[0], a[1] = "eval", s.src
	}
	return a
}

// cmdReply is a queued command's reply, after Exec.
func cmdReply(cmd redis.Cmder) (any, error) {
	switch c := cmd.(type) {
	case *redis.Cmd:
		return c.Result()
	case *redis.StringSliceCmd:
		return c.Result()
	case *redis.StringCmd:
		return c.Result()
	case *redis.StatusCmd:
		return c.Result()
	}
	return nil, cmd.Err()
}

// reply turns a command's reply into op's Result.
func reply(op driver.Op, v any, err error) (driver.Result, error) {
	if op.Kind() == driver.OpGet && errors.Is(err, redis.Nil) {
		return driver.Result{Nil: true}, nil
	}
	if err != nil {
		return driver.Result{}, err
	}
	return parseReply(op, v)
}

// parseReply turns a script's or command's reply into a Result.
func parseReply(op driver.Op, v any) (driver.Result, error) {
	switch op.Kind() {
	case driver.OpAcquire, driver.OpFence, driver.OpPause:
		arr, ok := v.([]any)
		if !ok || len(arr) < 2 {
			return driver.Result{}, fmt.Errorf("unexpected reply %T", v)
		}
		return parseArrayReply(op.Kind(), arr), nil
	case driver.OpClaims:
		fields, ok := v.([]string)
		if !ok {
			return driver.Result{}, fmt.Errorf("unexpected reply %T", v)
		}
		return driver.Result{Fields: fields}, nil
	case driver.OpExtend, driver.OpRelease, driver.OpMaxSet, driver.OpLogAdd:
		n, ok := v.(int64)
		if !ok {
			return driver.Result{}, fmt.Errorf("unexpected reply %T", v)
		}
		switch op.Kind() {
		case driver.OpMaxSet:
			return driver.Result{N: n}, nil
		case driver.OpRelease:
			return driver.Result{Status: n & 1, AlsoStatus: n >> 1}, nil
		}
		return driver.Result{Status: n}, nil
	case driver.OpLog:
		return parseLogReply(v)
	case driver.OpGet:
		s, _ := v.(string)
		if g, _ := op.(driver.GetOp); g.Lease {
			return driver.Result{Value: s}, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return driver.Result{}, fmt.Errorf("record %q: %w", s, err)
		}
		return driver.Result{N: n}, nil
	}
	return driver.Result{}, nil
}

// parseArrayReply reads the array an acquire, fence or pause script
// returns: its status first, then what the kind adds.
func parseArrayReply(kind driver.OpKind, arr []any) driver.Result {
	var r driver.Result
	r.Status, _ = arr[0].(int64)
	switch kind {
	case driver.OpFence:
		r.N, _ = arr[1].(int64)
		return r
	case driver.OpPause:
		r.Value, _ = arr[1].(string)
		return r
	}
	r.Value, _ = arr[1].(string)
	if len(arr) > 2 {
		r.N, _ = arr[2].(int64)
	}
	if len(arr) > 4 {
		r.Orphan, _ = arr[3].(string)
		r.OrphanValue, _ = arr[4].(string)
	}
	if len(arr) > 5 {
		r.Pause, _ = arr[5].(string)
	}
	if len(arr) > 6 {
		r.AlsoStatus, _ = arr[6].(int64)
	}
	if len(arr) > 7 {
		r.Claim, _ = arr[7].(string)
	}
	return r
}

// parseLogReply reads a log read's (value, score) pairs.
func parseLogReply(v any) (driver.Result, error) {
	arr, ok := v.([]any)
	if !ok {
		return driver.Result{}, fmt.Errorf("unexpected reply %T", v)
	}
	var r driver.Result
	for i := 0; i+1 < len(arr); i += 2 {
		val, _ := arr[i].(string)
		sc, _ := arr[i+1].(string)
		n, err := strconv.ParseFloat(sc, 64)
		if err != nil {
			return driver.Result{}, fmt.Errorf("log score %q: %w", sc, err)
		}
		r.Log = append(r.Log, locking.LogEntry{Score: int64(n), Value: val})
	}
	return r, nil
}
