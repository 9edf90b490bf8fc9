package history

import "slices"

// A replica's name (SLOTLOCK_REPLICA, else the host name) is what its log
// lines, lock values and heartbeats say of it. Two processes that run
// under one name at once — two replicas started on one host with the
// default, one name set in a template for every copy — stay safe (a lease
// is its random token, not the name), but the audit trail cannot tell
// them apart: whose run a line is, which process holds a slot (`holder`),
// which one died when an open claim is settled; and the candidate ranking
// counts them as one replica. Their heartbeats can tell: each process
// beats under an instance of its own.

// NameShared reports whether a and b are two processes of one replica
// name that ran at once: each beat more than a beat after the other
// started. A restarted replica's earlier process beats no more once the
// new one starts; the beat's margin covers the heartbeats' rounding to
// the second and the clocks of two hosts.
func NameShared(a, b ReplicaInfo) bool {
	grace := max(a.beat(), b.beat())
	return a.Replica == b.Replica && a.Instance != b.Instance &&
		a.Seen.After(b.Started.Add(grace)) && b.Seen.After(a.Started.Add(grace))
}

// SharedName is a replica name that processes alive at once share, and
// their instances.
type SharedName struct {
	Replica   string
	Instances []string
}

// SharedNames are the names that replicas alive share with another
// (NameShared), with the processes that do, in the order of s.Replicas.
func (s Status) SharedNames() []SharedName {
	var out []SharedName
	for _, r := range s.Replicas {
		if !slices.ContainsFunc(s.Replicas, func(o ReplicaStatus) bool { return NameShared(r.info(), o.info()) }) {
			continue
		}
		k := slices.IndexFunc(out, func(n SharedName) bool { return n.Replica == r.Replica })
		if k < 0 {
			k = len(out)
			out = append(out, SharedName{Replica: r.Replica})
		}
		out[k].Instances = append(out[k].Instances, r.Instance)
	}
	return out
}

// info is the heartbeat with the time it was seen.
func (r ReplicaStatus) info() ReplicaInfo {
	ri := r.ReplicaInfo
	ri.Seen = r.Seen
	return ri
}
