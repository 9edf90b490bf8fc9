package redlock

import (
	"context"
	"fmt"
	"slices"

	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"

	"github.com/redis/go-redis/v9"
)

// Folding: within one pipeline, the calls of one script are sent as ONE
// script call — its batch form, generated here from the script's own
// source (one source of truth per script): the body becomes a function of
// (KEYS, ARGV), called once per folded call with its slices of the real
// KEYS and ARGV, each under pcall, and the batch replies an array of the
// calls' own replies. A burst of a thousand claims is then a handful of
// script calls per node, not a thousand, each paying the script-call
// overhead once.
//
// What each call does is unchanged: it sees its own keys and arguments,
// and a call that fails (a Lua or Redis error inside it) is that call's
// error reply, its writes before the error kept, as a plain script's are;
// the others run on. The folded calls run on the node in their queue
// order, back to back and atomically as a whole: nothing runs between
// them — a stronger property than the pipeline's, which only orders them.
// (Redis also sees one script's time for key expiry, its start: a lease
// that is live when the batch starts is live to every call in it, and no
// other client can take it before the batch ends.)
//
// Order. A call joins the fold of its script only where no call between
// them touches its hash tag; else it starts a new fold. Every key of one
// call shares its hash tag, so calls of different tags touch different
// keys and commute: the pipeline's effect is the queue order's, tag by
// tag. (Calls in one pipeline were concurrent anyway: a caller queues its
// next call on a node only once its last one is answered or given up.)
//
// Cluster endpoints. A script's keys must all lie in one hash slot there,
// so on a node known to be a cluster endpoint calls fold only with calls
// of the same slot (CRC16 of the hash tag); on a standalone node every
// call of a script folds into one. A fold sent to a cluster endpoint the
// node does not yet know for one is refused whole (CROSSSLOT, or MOVED or
// ASK: nothing ran), and is sent again as a redirection is: the node
// switches to its cluster client and folds by slot.
//
// A call alone in its pipeline, or alone of its script and slot, is sent
// as a plain call of the plain script: nothing to fold, no batch
// overhead. maxBatch bounds a fold as it bounds a pipeline.

// foldLoop runs a script's calls, the batch form's body after the
// function one(KEYS, ARGV) that is the script. ARGV[1] is the number of
// calls n, ARGV[2i] and ARGV[2i+1] the key and argument counts of call i;
// the calls' arguments follow, and KEYS holds the calls' keys in order.
const foldLoop = `
local n = tonumber(ARGV[1])
local out = {}
local k, a = 0, 2 * n + 1
for i = 1, n do
  local nk, na = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local keys, argv = {}, {}
  for j = 1, nk do keys[j] = KEYS[k + j] end
  for j = 1, na do argv[j] = ARGV[a + j] end
  k, a = k + nk, a + na
  local ok, r = pcall(one, keys, argv)
  if not ok then
    if type(r) ~= 'table' or type(r.err) ~= 'string' then
      r = redis.error_reply(tostring(r))
    end
  elseif r == nil then
    r = false
  end
  out[i] = r
end
return out
`

// foldServerTime is servertime() in a batch form: the node's clock read
// once for the whole fold, at its first call that asks. The folded calls
// run as one atomic step, nothing between them, so taking the time their
// step began as each one's is as if they all ran at that instant — an
// instant after every one of them was sent, as each one's own TIME is.
// It is the instant Redis itself judges every key's expiry at within the
// step (a script's start), so the lives' deadlines, kept in hash fields,
// and the leases' key TTLs are judged at one time. One TIME per fold,
// not one per claim: a claim's commands on a node are about a dozen.
const foldServerTime = `local servertimeAt
local function servertime()
  if not servertimeAt then servertimeAt = redis.call('TIME') end
  return servertimeAt
end
`

// newFoldScript is the batch form of the script src, after prelude (the
// definitions src needs once per fold: foldServerTime, or "").
func newFoldScript(prelude, src string) *luaScript {
	fold := prelude + "local function one(KEYS, ARGV)\n" + src + "\nend\n" + foldLoop
	return &luaScript{src: fold, sha: redis.NewScript(fold).Hash()}
}

// unit is one command of a pipeline: one call, or the calls folded into
// one call of their script's batch form (fold set).
type unit struct {
	fold  *luaScript
	calls []*nodeCall
	cmd   redis.Cmder
}

// foldGroup is what folded calls share: their script and, on a cluster
// endpoint, their hash slot (-1 on a standalone node).
type foldGroup struct {
	s    *luaScript
	slot int
}

// plan orders calls into the pipeline's units (see Order above), building
// each script call's arguments once (kept on the call for a resend). A
// unit's calls start as a sub-slice of calls, capped so that a call
// joining it copies them out. A lone call's unit goes in one, the
// caller's (a pipeline of one call allocates no unit list).
func (n *redisNode) plan(calls []*nodeCall, one *[1]unit) []unit {
	for _, c := range calls {
		if c.args == nil {
			c.script, c.args = scriptCall(c.op, false)
		}
	}
	if len(calls) == 1 { // a lone call: nothing to fold
		one[0] = unit{calls: calls}
		return one[:]
	}
	cluster := n.cluster.Load()
	units := make([]unit, 0, len(calls))
	open := map[foldGroup]int{} // the unit a call of the group may join
	last := map[string]int{}    // the last unit touching a hash tag
	for i, c := range calls {
		tag := wire.HashTag(opKey(c))
		if c.script == nil {
			units = append(units, unit{calls: calls[i : i+1 : i+1]})
			if tag != "" {
				last[tag] = len(units) - 1
			}
			continue
		}
		g := foldGroup{s: c.script, slot: -1}
		if cluster {
			g.slot = wire.TagSlot(tag)
		}
		at, ok := open[g]
		if l, touched := last[tag]; ok && touched && l > at {
			ok = false
		}
		if ok {
			units[at].calls = append(units[at].calls, c)
		} else {
			units = append(units, unit{calls: calls[i : i+1 : i+1]})
			at = len(units) - 1
			open[g] = at
		}
		if l, touched := last[tag]; !touched || l < at {
			last[tag] = at
		}
	}
	for i := range units {
		if len(units[i].calls) > 1 {
			units[i].fold = units[i].calls[0].script.fold
		}
	}
	return units
}

// opKey is the first key of a call (its hash tag is every key's), "" for
// a call without keys.
func opKey(c *nodeCall) string {
	if c.args != nil {
		if c.args[2].(int) == 0 {
			return ""
		}
		k, _ := c.args[3].(string)
		return k
	}
	switch op := c.op.(type) {
	case driver.ClaimsOp:
		return op.Claims
	case driver.GetOp:
		return op.Key
	}
	return ""
}

// queue adds the unit to p: its call alone (EVAL instead of EVALSHA when
// eval), or its calls as one call of the batch form.
func (u *unit) queue(ctx context.Context, p redis.Pipeliner, eval bool) {
	c := u.calls[0]
	switch {
	case c.script == nil:
		u.cmd = queueCommand(ctx, p, c.op)
		return
	case u.fold == nil:
		if eval && c.args[0] != "eval" {
			// The list may be shared with the op's calls to the other
			// nodes (wireOf), which may be writing it now: this call
			// takes a copy of its own.
			c.args = slices.Clone(c.args)
			c.args[0], c.args[1] = "eval", c.script.src
		}
		u.cmd = queueScript(ctx, p, c.args)
		return
	}
	u.cmd = queueScript(ctx, p, foldArgs(u.fold, u.calls, eval))
}

// foldArgs is the argument list of one call of the batch form fold
// running calls (see foldLoop).
func foldArgs(fold *luaScript, calls []*nodeCall, eval bool) []any {
	keys, args := 0, 0
	for _, c := range calls {
		nk := c.args[2].(int)
		keys += nk
		args += len(c.args) - 3 - nk
	}
	a := scriptArgs(fold, eval, keys+1+2*len(calls)+args)
	a[2] = keys
	for _, c := range calls {
		a = append(a, c.args[3:3+c.args[2].(int)]...)
	}
	a = append(a, len(calls))
	for _, c := range calls {
		nk := c.args[2].(int)
		a = append(a, nk, len(c.args)-3-nk)
	}
	for _, c := range calls {
		a = append(a, c.args[3+c.args[2].(int):]...)
	}
	return a
}

// answer answers the unit's calls from its reply (v, err), except those
// it returns: refused unexecuted, for the pipeline to send again (resend).
func (n *redisNode) answer(u *unit, v any, err error, eval bool, again []*nodeCall) []*nodeCall {
	if err == nil && u.fold != nil {
		n.answerFold(u, v)
		return again
	}
	if err != nil && n.resend(err, eval, u.fold != nil) {
		return append(again, u.calls...)
	}
	for _, c := range u.calls {
		c.finish(reply(c.op, v, err))
	}
	return again
}

// resend reports whether a command refused with err ran nothing and is to
// be sent again: a missing script (as EVAL, unless it was), or a cluster
// endpoint's redirection — or, for a fold, its refusal of keys across
// slots — to a node not yet switched to its cluster client.
func (n *redisNode) resend(err error, eval, folded bool) bool {
	switch {
	case !eval && redis.HasErrorPrefix(err, "NOSCRIPT"):
		return true
	case n.cluster.Load():
		return false
	}
	return isRedirect(err) || folded && redis.HasErrorPrefix(err, "CROSSSLOT")
}

// answerFold answers each folded call with its element of the batch's
// reply: its value, or its own error.
func (n *redisNode) answerFold(u *unit, v any) {
	arr, ok := v.([]any)
	if !ok || len(arr) != len(u.calls) {
		err := fmt.Errorf("unexpected batch reply %T for %d calls", v, len(u.calls))
		for _, c := range u.calls {
			c.finish(driver.Result{}, err)
		}
		return
	}
	for i, c := range u.calls {
		var err error
		switch e := arr[i].(type) {
		case nil:
			err = redis.Nil // a script's false or nil, as a plain call's
		case error:
			err = e
		}
		if err != nil {
			c.finish(reply(c.op, nil, err))
			continue
		}
		c.finish(reply(c.op, arr[i], nil))
	}
}
