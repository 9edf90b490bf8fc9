package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// One node: its address, its state and a client to it.

// Node is one redis-server process. Its methods are safe for concurrent use.
type Node struct {
	c    *Cluster
	idx  int
	port int
	dir  string
	// busPort is the Redis Cluster bus port in cluster mode, kept across
	// Restart as port is.
	busPort int

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has been waited for
	paused  bool
	log     *syncBuffer
	client  *redis.Client
	stopped bool // Close was called
}

// Addr returns "127.0.0.1:port". The port stays the same across Restart.
func (n *Node) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// Port returns the node's TCP port.
func (n *Node) Port() int { return n.port }

// PID returns the process id, or 0 when the node is not running.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Running reports whether the process is alive (paused counts as alive).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// Log returns what the process wrote so far (its log goes to stdout).
func (n *Node) Log() string { return n.log.String() }

// Client returns a go-redis client for this node alone, configured with the
// cluster's credentials and TLS, to inspect or change the node directly.
// It is created once and closed by Cluster.Close.
func (n *Node) Client() *redis.Client {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.client == nil {
		n.client = redis.NewClient(n.clientOptions())
	}
	return n.client
}

func (n *Node) clientOptions() *redis.Options {
	return &redis.Options{
		Addr:        n.Addr(),
		Username:    n.c.cfg.user,
		Password:    n.c.cfg.password,
		TLSConfig:   n.c.ClientTLS(),
		DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second,
		MaxRetries:  -1,
		PoolSize:    4,
		// Honour the caller's context deadline on the socket, so a
		// command to a paused node ends when the caller's context does.
		ContextTimeoutEnabled: true,
	}
}

// PauseWrites makes the node hold every write for d (CLIENT PAUSE d
// WRITE, Redis >= 6.2), as Redis's own FAILOVER and managed services'
// maintenance do: reads are answered at once, while each write, and each
// EVAL/EVALSHA of a script not flagged no-writes, waits until the pause
// ends; keys do not expire meanwhile. A held write whose client gives up
// and closes its connection (go-redis does on a timeout) is dropped, never
// executed. The pause ends by itself; of two overlapping pauses the later
// end wins.
func (n *Node) PauseWrites(d time.Duration) error {
	ms := d.Milliseconds()
	if ms < 1 {
		return fmt.Errorf("redistest: pause writes of node %d for %v: want at least 1ms", n.idx, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := n.Client().Do(ctx, "CLIENT", "PAUSE", ms, "WRITE").Err(); err != nil {
		return fmt.Errorf("redistest: pause writes of node %d (%s): %w", n.idx, n.Addr(), err)
	}
	return nil
}

// busyLoop runs until ARGV[1] microseconds have passed on the node's
// clock: a script that keeps the node to itself.
const busyLoop = `local t = redis.call('TIME')
local stop = tonumber(t[1]) * 1000000 + tonumber(t[2]) + tonumber(ARGV[1])
while true do
  local n = redis.call('TIME')
  if tonumber(n[1]) * 1000000 + tonumber(n[2]) >= stop then return 1 end
end`

// BusyScript runs a script on the node that keeps it busy for d, as
// another client's runaway script on a shared Redis does, and returns
// when the script ends. Redis runs one script at a time and nothing
// beside it: a command that arrives meanwhile waits, and once the script
// has run for threshold (busy-reply-threshold, set for the call and
// restored after; Redis's default is 5 s) every command is answered with a
// BUSY error, unexecuted, until the script ends.
func (n *Node) BusyScript(d, threshold time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Second)
	defer cancel()
	o := n.clientOptions()
	o.ReadTimeout = d + 3*time.Second // the script's own call answers when it ends
	cl := redis.NewClient(o)
	defer cl.Close()
	prev, err := cl.ConfigGet(ctx, "busy-reply-threshold").Result()
	if err != nil {
		return fmt.Errorf("redistest: busy script on node %d: %w", n.idx, err)
	}
	if err := cl.ConfigSet(ctx, "busy-reply-threshold", strconv.FormatInt(threshold.Milliseconds(), 10)).Err(); err != nil {
		return fmt.Errorf("redistest: busy script on node %d: %w", n.idx, err)
	}
	err = cl.Eval(ctx, busyLoop, nil, d.Microseconds()).Err()
	if v, ok := prev["busy-reply-threshold"]; ok {
		if rerr := cl.ConfigSet(ctx, "busy-reply-threshold", v).Err(); err == nil {
			err = rerr
		}
	}
	if err != nil {
		return fmt.Errorf("redistest: busy script on node %d for %v: %w", n.idx, d, err)
	}
	return nil
}

// KillClients closes every client connection of the node but the
// caller's (CLIENT KILL TYPE normal), as a managed Redis does when it
// patches or scales: calls in flight on them are lost, unanswered, and
// each client must connect again. It returns how many it closed.
func (n *Node) KillClients() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	killed, err := n.Client().ClientKillByFilter(ctx, "TYPE", "normal").Result()
	if err != nil {
		return 0, fmt.Errorf("redistest: kill the clients of node %d: %w", n.idx, err)
	}
	return killed, nil
}
