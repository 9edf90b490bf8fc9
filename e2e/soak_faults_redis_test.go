//go:build linux

package e2e

import (
	"fmt"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// redisProcessFaults befall the Redis servers: killed, restarted empty,
// failed over, clock stepped, paused — one node or a majority.
var redisProcessFaults = []soakFault{
	{"redis_kill_one", func(s *soak) string {
		i := s.rng.IntN(3)
		n := s.c.Redis.Node(i)
		if err := n.Kill(); err != nil {
			s.t.Fatal(err)
		}
		d := s.dur(2000, 8000)
		time.Sleep(d)
		if err := n.Start(); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d down %v", i, d)
	}},
	{"redis_restart_empty", func(s *soak) string {
		// Node 0 only: it comes back without its data (its files removed
		// before it starts), the other two keep theirs, so every majority
		// still holds the fencing history, as the contract asks. Not a
		// FLUSHALL after the start: the node would have acknowledged
		// claims in between and then lost them — outside the contract —
		// and a claim that reached a bare majority of it and one other
		// node was then claimed again (a soak, seed 1796299318015521334).
		n := s.c.Redis.Node(0)
		if err := n.Kill(); err != nil {
			s.t.Fatal(err)
		}
		d := s.dur(500, 4000)
		time.Sleep(d)
		if err := n.StartEmpty(); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node 0 down %v, back empty", d)
	}},
	{"redis_failover_one", func(s *soak) string {
		// A managed cache failing over to a replica that lagged: the node
		// runs on for a while after a checkpoint, is lost, and comes back
		// with what it held at the checkpoint — the writes of those seconds
		// lost, what it deleted then back (ended claims with their leases,
		// released job leases, undone claims), the fencing counter lower.
		// The other two keep everything (one fault at a time): the
		// condition under which the guarantee covers a failover. No fault
		// window: a majority answers throughout.
		i := s.rng.IntN(3)
		n := s.c.Redis.Node(i)
		cp, err := n.Checkpoint()
		if err != nil {
			s.t.Fatal(err)
		}
		lag := s.dur(500, 5000)
		time.Sleep(lag)
		keys := s.dbsize(n)
		if err := n.Kill(); err != nil {
			s.t.Fatal(err)
		}
		down := s.dur(100, 1000)
		time.Sleep(down)
		if err := n.StartFrom(cp); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d back %v later from its state %v before it was lost (keys %d, then %d)", i, down, lag, keys, s.dbsize(n))
	}},
	{"redis_clock_step_one", func(s *soak) string {
		// One node's wall clock stepped (a bad time source, a VM resumed
		// from a snapshot, an operator's date): forward by one to three
		// lock TTLs, which ends at once every lease and claim the node
		// holds and makes its scripts judge every run there expired, or
		// back as far, which keeps them late; the real time again after
		// 1–5 s, which keeps what the node set meanwhile that much longer
		// (or ends it early). The other two keep the right time (one fault
		// at a time): no fault window.
		i := s.rng.IntN(3)
		n := s.c.Redis.Node(i)
		step := s.c.spec.TTL * time.Duration(2+s.rng.IntN(5)) / 2
		if s.rng.IntN(3) == 0 {
			step = -step
		}
		keys := s.dbsize(n)
		if err := n.StepClock(step); err != nil {
			s.t.Fatal(err)
		}
		d := s.dur(1000, 5000)
		time.Sleep(d)
		stepped := s.dbsize(n) // the expired keys go within the step
		if err := n.StepClock(0); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d's clock stepped %v for %v (keys %d, then %d)", i, step, d, keys, stepped)
	}},
	{"redis_kill_two", func(s *soak) string {
		// Back, the majority answers at once the claims retried while it
		// was down: a slot due in the outage (retried until its lateness
		// ends) and the next one (a replica whose clock runs ahead fires
		// it early) are then claimed together, and their allow runs may
		// start a few milliseconds out of token order, as after a frozen
		// majority (seed 1796464461892896055: tick's slots :45 and :46,
		// tokens 439 and 438, started 2 ms apart, r3 at +800 ms).
		at := time.Now()
		i, j, d := s.majorityOut((*redistest.Node).Kill, (*redistest.Node).Start)
		back := time.Now()
		s.c.Faults.Legit(s.c.Faults.Start(at), back.Add(time.Second), "Redis majority down")
		s.c.Faults.ClaimsTogether(s.c.Faults.Start(at), back.Add(s.c.spec.lateness()), "Redis majority down")
		return fmt.Sprintf("nodes %d and %d down %v", i, j, d)
	}},
	{"redis_pause_one", func(s *soak) string {
		i := s.rng.IntN(3)
		n := s.c.Redis.Node(i)
		if err := n.Pause(); err != nil {
			s.t.Fatal(err)
		}
		d := s.dur(2000, 6000)
		time.Sleep(d)
		if err := n.Resume(); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d SIGSTOP %v", i, d)
	}},
	{"redis_pause_two", func(s *soak) string {
		// A majority frozen: unlike killed nodes it keeps its connections
		// open, so the replicas' calls queue behind pipelines it never
		// answers, and run when it resumes (their senders undo them).
		at := time.Now()
		i, j, d := s.majorityOut((*redistest.Node).Pause, (*redistest.Node).Resume)
		back := time.Now()
		s.c.Faults.Legit(s.c.Faults.Start(at), back.Add(time.Second), "Redis majority frozen")
		s.c.Faults.ClaimsTogether(s.c.Faults.Start(at), back.Add(s.c.spec.lateness()), "Redis majority frozen")
		return fmt.Sprintf("nodes %d and %d SIGSTOP %v", i, j, d)
	}},
}

// redisCommandFaults leave a node running and make it refuse or hold
// commands: writes paused or refused, memory full, a busy script, the
// script cache flushed, the clients' connections killed.
var redisCommandFaults = []soakFault{
	{"redis_pause_writes_one", func(s *soak) string {
		// Reads answered, writes held (and dropped when their callers
		// give up), for up to two lock TTLs.
		i := s.rng.IntN(3)
		d := s.dur(1000, int(2*s.c.spec.TTL/time.Millisecond))
		if err := s.c.Redis.Node(i).PauseWrites(d); err != nil {
			s.t.Fatal(err)
		}
		time.Sleep(d)
		return fmt.Sprintf("node %d CLIENT PAUSE WRITE %v", i, d)
	}},
	{"redis_out_of_memory_one", func(s *soak) string {
		// Memory full (maxmemory reached, noeviction): every write
		// refused with OOM, reads answered.
		i := s.rng.IntN(3)
		d := s.dur(2000, 6000)
		setMaxmemory(s.t, s.c.Redis.Node(i), "1")
		time.Sleep(d)
		setMaxmemory(s.t, s.c.Redis.Node(i), "0")
		return fmt.Sprintf("node %d out of memory for %v", i, d)
	}},
	{"redis_refuse_writes_one", func(s *soak) string {
		// Every write refused, renewals and releases too, reads answered
		// and the data kept: a primary under min-replicas-to-write whose
		// replicas fell behind (NOREPLICAS), as a demoted node refuses
		// with READONLY. A run that ends meanwhile leaves its claim there.
		i := s.rng.IntN(3)
		d := s.dur(1000, 6000)
		n := s.c.Redis.Node(i)
		if err := n.RefuseWrites(true); err != nil {
			s.t.Fatal(err)
		}
		time.Sleep(d)
		if err := n.RefuseWrites(false); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d refused every write for %v", i, d)
	}},
	{"redis_refuse_writes_two", func(s *soak) string {
		// A majority refusing writes: no claim, renewal or release goes
		// through, the claims read (done markers, the history) still
		// answer; back, the slots retried in the meantime are claimed
		// together, as after a majority down.
		at := time.Now()
		i, j, d := s.majorityOut(func(n *redistest.Node) error { return n.RefuseWrites(true) },
			func(n *redistest.Node) error { return n.RefuseWrites(false) })
		back := time.Now()
		s.c.Faults.Legit(s.c.Faults.Start(at), back.Add(time.Second), "Redis majority refusing writes")
		s.c.Faults.ClaimsTogether(s.c.Faults.Start(at), back.Add(s.c.spec.lateness()), "Redis majority refusing writes")
		return fmt.Sprintf("nodes %d and %d refused every write for %v", i, j, d)
	}},
	{"redis_busy_script_one", func(s *soak) string {
		// Another client's runaway script: every command held, then,
		// past the busy threshold, answered BUSY unexecuted.
		i := s.rng.IntN(3)
		d, threshold := s.dur(2000, 6000), s.dur(100, 1000)
		if err := s.c.Redis.Node(i).BusyScript(d, threshold); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d busy with a script for %v (BUSY after %v)", i, d, threshold)
	}},
	{"redis_script_flush_one", func(s *soak) string {
		// The node's script cache emptied while the fleet claims: each
		// call is answered NOSCRIPT and sent again with its source.
		i := s.rng.IntN(3)
		flushScripts(s.t, s.c.Redis.Node(i))
		time.Sleep(s.dur(1000, 3000))
		return fmt.Sprintf("node %d SCRIPT FLUSH", i)
	}},
	{"redis_client_kill_one", func(s *soak) string {
		// Every connection to the node closed by the node (a managed
		// Redis patching or scaling), twice a second for a while: calls
		// in flight lost, every client reconnecting.
		i := s.rng.IntN(3)
		d := s.dur(1000, 4000)
		var closed int64
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
			n, err := s.c.Redis.Node(i).KillClients()
			if err != nil {
				s.t.Fatal(err)
			}
			closed += n
		}
		return fmt.Sprintf("node %d closed its clients' connections for %v (%d closed)", i, d, closed)
	}},
}
