//go:build linux

package e2e

import (
	"fmt"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// proxyFaults befall the network to node 2 (its fault proxy): latency
// below and above the op timeout, a black hole, replies lost.
var proxyFaults = []soakFault{
	{"proxy_latency_below_op_timeout", func(s *soak) string {
		l := s.c.spec.OpTimeout * 3 / 10
		s.c.Proxy.SetLatency(l)
		d := s.dur(3000, 8000)
		time.Sleep(d)
		s.c.Proxy.SetLatency(0)
		return fmt.Sprintf("node 2 +%v each way for %v", l, d)
	}},
	{"proxy_latency_above_op_timeout", func(s *soak) string {
		l := s.c.spec.OpTimeout * 3 / 2
		s.c.Proxy.SetLatency(l)
		d := s.dur(3000, 8000)
		time.Sleep(d)
		s.c.Proxy.SetLatency(0)
		return fmt.Sprintf("node 2 +%v each way for %v", l, d)
	}},
	{"proxy_blackhole", func(s *soak) string {
		s.c.Proxy.SetMode(redistest.Blackhole)
		d := s.dur(3000, 8000)
		time.Sleep(d)
		s.c.Proxy.SetMode(redistest.Pass)
		return fmt.Sprintf("node 2 for %v", d)
	}},
	{"proxy_lose_replies", func(s *soak) string {
		// Requests reach node 2 and run; their answers never come back.
		s.c.Proxy.SetMode(redistest.LoseReplies)
		d := s.dur(3000, 8000)
		time.Sleep(d)
		s.c.Proxy.SetMode(redistest.Pass)
		return fmt.Sprintf("node 2 for %v", d)
	}},
}

// linkFaults befall one replica's links to the nodes (cut, isolated,
// slowed, reset, split views), and the last the proxy refusing
// connections.
var linkFaults = []soakFault{
	{"link_cut_one", func(s *soak) string {
		// One replica cut from one node its peers still reach (a
		// partition between hosts): packets dropped, connections reset or
		// replies lost. It keeps a majority, so no fault window.
		r, i := s.replica().Name, s.rng.IntN(3)
		mode := []redistest.ProxyMode{redistest.Blackhole, redistest.Reject, redistest.LoseReplies}[s.rng.IntN(3)]
		d := s.dur(2000, 8000)
		s.c.Links.Link(r, i).SetMode(mode)
		time.Sleep(d)
		s.c.Links.Link(r, i).SetMode(redistest.Pass)
		return fmt.Sprintf("%s cut from node %d (%v) for %v", r, i, mode, d)
	}},
	{"link_isolate_one", func(s *soak) string {
		// One replica cut from two nodes, a majority its peers still
		// reach: it goes on running, its renewals fail, and it must stop
		// its run before its lease lapses, when a peer may take the job
		// over (no overlap, no duplicate, tokens in order). Its job lease
		// keeps the forbid job out for up to a TTL: a fault window from
		// the cut, or, when only its replies are lost, from the cut to a
		// TTL after its end — its claims land on the nodes, where its
		// peers find them held, and it undoes them: such a slot is missed
		// (slot.missed). Duplicates and overlaps are never excused.
		r, keep, links := s.majorityLinks()
		mode := []redistest.ProxyMode{redistest.Blackhole, redistest.Reject, redistest.LoseReplies}[s.rng.IntN(3)]
		d := s.dur(2000, 8000)
		cut := func(m redistest.ProxyMode) {
			for _, l := range links {
				l.SetMode(m)
			}
		}
		at := time.Now()
		cut(mode)
		time.Sleep(d)
		cut(redistest.Pass)
		until := at
		if mode == redistest.LoseReplies {
			until = time.Now()
		}
		s.c.Faults.Legit(s.c.Faults.Start(at), until.Add(s.c.spec.TTL+time.Second), "replica "+r+" cut from a majority")
		return fmt.Sprintf("%s cut from every node but %d (%v) for %v", r, keep, mode, d)
	}},
	{"link_slow_majority_one", func(s *soak) string {
		// One replica's links to two nodes slower than its op timeout
		// (a congested route): its requests run there late, after it gave
		// up on them and sent their undo behind them, and its renewals
		// land late; to itself it has no majority. Windows as for
		// link_isolate_one with its replies lost: what it sent lands until
		// the delay drains, and its peers find its claims held there until
		// their undo follows (a new connection's handshake takes a round
		// trip: releaseWait in locking/redlock).
		r, keep, links := s.majorityLinks()
		l := s.c.spec.OpTimeout * time.Duration(3+s.rng.IntN(6)) / 2
		d := s.dur(2000, 8000)
		at := time.Now()
		for _, link := range links {
			link.SetLatency(l)
		}
		time.Sleep(d)
		for _, link := range links {
			link.SetLatency(0)
		}
		s.c.Faults.Legit(s.c.Faults.Start(at), time.Now().Add(l+s.c.spec.TTL+time.Second), "replica "+r+" slowed on a majority")
		return fmt.Sprintf("%s +%v each way to every node but %d for %v", r, l, keep, d)
	}},
	{"link_flap_all_one", func(s *soak) string {
		// One replica's connections to every node reset together every
		// 100-400 ms (a flapping interface, a NAT table flushed): the
		// calls in flight at each reset fail everywhere at once, and it
		// reconnects in between. It reaches a majority between resets and
		// its retries and renewals carry it: no fault window.
		r := s.replica().Name
		d := s.dur(2000, 8000)
		resets := 0
		for end := time.Now().Add(d); time.Now().Before(end); resets++ {
			for i := range 3 {
				s.c.Links.Link(r, i).Cut()
			}
			time.Sleep(s.dur(100, 400))
		}
		return fmt.Sprintf("%s's connections to every node reset %d times in %v", r, resets, d)
	}},
	{"link_split_views", func(s *soak) string {
		// Every running replica cut from another node: each keeps a
		// majority, every two share one node only.
		names := s.c.Running()
		shift, mode := s.rng.IntN(3), []redistest.ProxyMode{redistest.Blackhole, redistest.LoseReplies}[s.rng.IntN(2)]
		d := s.dur(2000, 8000)
		var cuts []string
		for k, r := range names {
			s.c.Links.Link(r, (k+shift)%3).SetMode(mode)
			cuts = append(cuts, fmt.Sprintf("%s from node %d", r, (k+shift)%3))
		}
		time.Sleep(d)
		for k, r := range names {
			s.c.Links.Link(r, (k+shift)%3).SetMode(redistest.Pass)
		}
		return fmt.Sprintf("%s (%v) for %v", strings.Join(cuts, ", "), mode, d)
	}},
	{"proxy_reject", func(s *soak) string {
		s.c.Proxy.SetMode(redistest.Reject)
		d := s.dur(2000, 6000)
		time.Sleep(d)
		s.c.Proxy.SetMode(redistest.Pass)
		return fmt.Sprintf("node 2 for %v", d)
	}},
}
