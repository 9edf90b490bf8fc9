//go:build linux

package e2e

import (
	"fmt"
	"slices"
	"time"
)

// replicaFaults befall the replicas: killed, frozen, throttled, stopped,
// reloaded, restarted with a clock offset.
var replicaFaults = []soakFault{
	{"replica_sigkill", func(s *soak) string {
		r := s.replica()
		at := time.Now()
		r.Kill()
		s.c.Faults.Legit(s.c.Faults.Start(at), at.Add(s.c.spec.TTL+time.Second), "replica "+r.Name+" SIGKILLed")
		d := s.dur(500, 3000)
		time.Sleep(d)
		s.c.StartReplica(r.Name, s.offsets[r.Name])
		return fmt.Sprintf("%s, restarted after %v", r.Name, d)
	}},
	{"replica_freeze_2ttl", func(s *soak) string {
		r := s.replica()
		f := r.Freeze(2 * s.c.spec.TTL)
		s.c.Faults.Legit(s.c.Faults.Start(f.From), f.To.Add(s.c.spec.TTL+time.Second), "replica "+r.Name+" frozen")
		return r.Name
	}},
	{"replica_freeze_half_ttl", func(s *soak) string {
		// Shorter than the lease: nothing is lost, so no fault window.
		r := s.replica()
		r.Freeze(s.c.spec.TTL / 2)
		return r.Name
	}},
	{"replica_log_stall_3ttl", func(s *soak) string {
		// Unfit after half a TTL; its leases lapse a TTL after their last
		// renewal (scenario log_stall).
		r := s.replica()
		at := time.Now()
		s.c.Faults.Legit(s.c.Faults.Start(at), at.Add(s.c.spec.TTL/2+s.c.spec.TTL+time.Second), "replica "+r.Name+"'s log output blocked")
		r.StallLogs(3 * s.c.spec.TTL)
		return r.Name
	}},
	{"replica_cpu_throttled", func(s *soak) string {
		// A tenth of a core (scenario cpu_throttle): slow, not gone, so
		// no fault window.
		r := s.replica()
		d := s.dur(3000, 8000)
		r.Throttle(d, 10*time.Millisecond, 90*time.Millisecond)
		return fmt.Sprintf("%s ran 10 ms of every 100 ms for %v", r.Name, d)
	}},
	{"replica_sigterm_restart", func(s *soak) string {
		r := s.replica()
		d, code := r.Stop()
		gap := s.dur(200, 2000)
		time.Sleep(gap)
		s.c.StartReplica(r.Name, s.offsets[r.Name])
		return fmt.Sprintf("%s exit %d after %v, restarted after %v", r.Name, code, d.Round(time.Millisecond), gap)
	}},
	{"replica_reload", func(s *soak) string {
		// A job file rolled out to one replica (hot reload, the file
		// renamed over the old one): every job's timeout toggled, so all
		// four are replaced under their names while runs go on — `long`,
		// forbid and longer than the gap between slots, always has one.
		// The fleet stays mixed until the next draw toggles it back, and
		// the other faults meet it so. One draw in three first rolls out
		// a broken file (a schedule with a 61st second), which the
		// replica must reject while every job goes on as it was.
		r := s.replica()
		rejected := ""
		if s.rng.IntN(3) == 0 {
			broken := slices.Clone(s.c.spec.Jobs)
			broken[0].Schedule = "61 * * * * *"
			if line := s.c.Reconfigure(r.Name, s.c.RenderJobs(broken)); str(line["event"]) != "config.rejected" {
				s.t.Fatalf("%s took a file with the schedule %q: %v", r.Name, broken[0].Schedule, line)
			}
			rejected = "a broken file rejected, then "
		}
		timeout := time.Minute
		if s.reloaded[r.Name] = !s.reloaded[r.Name]; s.reloaded[r.Name] {
			timeout = 50 * time.Second
		}
		jobs := slices.Clone(s.c.spec.Jobs)
		for i := range jobs {
			jobs[i].Timeout = timeout
		}
		line := s.c.Reconfigure(r.Name, s.c.RenderJobs(jobs))
		if str(line["event"]) != "config.reloaded" {
			s.t.Fatalf("%s rejected a valid job file: %v", r.Name, line)
		}
		return fmt.Sprintf("%s: %sreloaded, every job's timeout %v (changed: %v)", r.Name, rejected, timeout, line.Strings("changed"))
	}},
	{"replica_clock_offset", func(s *soak) string {
		r := s.replica()
		off := []time.Duration{-s.c.spec.Skew * 8 / 10, 0, s.c.spec.Skew * 8 / 10}[s.rng.IntN(3)]
		r.Stop()
		s.offsets[r.Name] = off
		s.c.StartReplica(r.Name, off)
		return fmt.Sprintf("%s restarted with SLOTLOCK_CLOCK_OFFSET=%v", r.Name, off)
	}},
}
