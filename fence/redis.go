package fence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisScript is the guard's Lua source (redis_guard.lua): the same script
// the Redis guard runs, for writers that are not Go programs, e.g. a shell
// job's `redis-cli EVAL` (see the package documentation). Its header
// documents KEYS, ARGV and the reply.
//
//go:embed redis_guard.lua
var RedisScript string

var redisGuard = redis.NewScript(RedisScript)

// Redis guards writes to Redis. Each write goes through one Lua script that
// compares the token with the highest token accepted for the data key
// (kept at FenceKey(key), in the same hash slot, so it works on a Redis
// Cluster endpoint too), refuses the write with a *StaleError when the token
// is lower, and otherwise does the write and raises the fence, atomically.
//
// A token equal to the highest is accepted: the same run may write again.
// Fence keys never expire: a stale writer may wake at any time.
//
// The zero value is not usable: set Client. A Redis is safe for concurrent
// use.
type Redis struct {
	// Client runs the script: a go-redis v9 client
	// (github.com/redis/go-redis/v9) — *redis.Client,
	// *redis.ClusterClient, *redis.Ring or any redis.UniversalClient.
	Client redis.Scripter
}

// Set does SET key value (with PX ttl when ttl > 0) if token is not stale
// for key.
func (g Redis) Set(ctx context.Context, key string, token uint64, value any, ttl time.Duration) error {
	args := []any{value}
	if ttl > 0 {
		ms := ttl.Milliseconds()
		if ms < 1 {
			ms = 1
		}
		args = append(args, ms)
	}
	_, err := g.run(ctx, key, token, "set", args...)
	return err
}

// HSet does HSET key field value ... if token is not stale for key.
// fieldValues are field, value pairs.
func (g Redis) HSet(ctx context.Context, key string, token uint64, fieldValues ...any) error {
	if err := pairs("HSet", fieldValues); err != nil {
		return err
	}
	_, err := g.run(ctx, key, token, "hset", fieldValues...)
	return err
}

// XAdd does XADD key * field value ... if token is not stale for key, and
// returns the new entry's id. fieldValues are field, value pairs.
func (g Redis) XAdd(ctx context.Context, key string, token uint64, fieldValues ...any) (string, error) {
	if err := pairs("XAdd", fieldValues); err != nil {
		return "", err
	}
	res, err := g.run(ctx, key, token, "xadd", fieldValues...)
	if err != nil {
		return "", err
	}
	id, _ := res.(string)
	return id, nil
}

// Advance only raises key's fence to token, or returns a *StaleError when
// the fence already holds a higher token. It suits a write that is not one
// of the above but is ordered by this call (the HTTP receiver's RedisStore).
func (g Redis) Advance(ctx context.Context, key string, token uint64) error {
	_, err := g.run(ctx, key, token, "none")
	return err
}

// run runs the guard script and turns its reply into the write's result or
// a *StaleError.
func (g Redis) run(ctx context.Context, key string, token uint64, op string, args ...any) (any, error) {
	if g.Client == nil {
		return nil, errors.New("fence: Redis.Client is nil")
	}
	fk, err := FenceKey(key)
	if err != nil {
		return nil, err
	}
	argv := append([]any{strconv.FormatUint(token, 10), op}, args...)
	reply, err := redisGuard.Run(ctx, g.Client, []string{fk, key}, argv...).Slice()
	if err != nil {
		return nil, fmt.Errorf("fence: guarded %s of %q: %w", op, key, err)
	}
	if len(reply) < 2 {
		return nil, fmt.Errorf("fence: guarded %s of %q: unexpected reply %v", op, key, reply)
	}
	if ok, _ := reply[0].(int64); ok == 0 {
		hs, _ := reply[1].(string)
		highest, _ := strconv.ParseUint(hs, 10, 64)
		return nil, &StaleError{Resource: key, Token: token, Highest: highest}
	}
	if len(reply) < 3 {
		return nil, nil
	}
	return reply[2], nil
}

// FenceKey is the key holding the highest token accepted for the data key
// key: "<key>:fence" when key has a hash tag ({...}), "{<key>}:fence" when
// it has none. Either way it hashes to key's cluster slot, so the guard's
// script touches one slot. A key without a hash tag that contains '}' is
// refused: its fence key could not share its slot (give it a hash tag).
func FenceKey(key string) (string, error) {
	if key == "" {
		return "", errors.New("fence: empty key")
	}
	if hasHashTag(key) {
		return key + ":fence", nil
	}
	if strings.Contains(key, "}") {
		return "", fmt.Errorf("fence: key %q contains '}' but no hash tag, so no fence key can share its cluster slot: put the data under a hash tag, e.g. {%s}", key, strings.ReplaceAll(key, "}", ""))
	}
	return "{" + key + "}:fence", nil
}

// hasHashTag reports whether Redis Cluster hashes key by a tag: a '{'
// followed, not at once, by a '}'.
func hasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	closing := strings.IndexByte(key[open+1:], '}')
	return closing > 0
}

func pairs(method string, fieldValues []any) error {
	if len(fieldValues) == 0 || len(fieldValues)%2 != 0 {
		return fmt.Errorf("fence: %s needs field, value pairs, got %d arguments", method, len(fieldValues))
	}
	return nil
}
