package locking

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// NewLocal returns a Backend that keeps its locks in this process. It has
// the same semantics as Redlock — TTLs measured on opt.Clock, done markers,
// fencing tokens, records — so a scheduler cannot tell them apart, but it
// coordinates nothing beyond this process: it is for a single replica with
// no Redis. Its state is lost when the process exits.
func NewLocal(opt Options) Backend {
	opt = opt.withDefaults()
	return newLocker(&localBackend{
		clock:   opt.Clock,
		keys:    make(map[Key]localEntry),
		claims:  make(map[string]map[string]string),
		pauses:  make(map[string]Pause),
		logs:    make(map[string][]LogEntry),
		lives:   make(map[string]map[string]localEntry),
		fences:  make(map[string]uint64),
		records: make(map[Key]int64),
		sweepAt: localSweepMin,
	}, opt)
}

const localSweepMin = 1024

type localEntry struct {
	value   string
	expires time.Time
}

type localBackend struct {
	clock   Clock
	mu      sync.Mutex
	keys    map[Key]localEntry
	claims  map[string]map[string]string     // family -> name -> claim value (as the claims hash)
	pauses  map[string]Pause                 // family -> pause state
	logs    map[string][]LogEntry            // family -> log, newest first
	lives   map[string]map[string]localEntry // family -> name -> a claim's lease (as the lives hash)
	fences  map[string]uint64                // by family
	records map[Key]int64
	sweepAt int // sweep expired keys when the map grows past this
}

// live returns key's entry if it exists and has not expired.
func (b *localBackend) live(key Key, now time.Time) (localEntry, bool) {
	e, ok := b.keys[key]
	if ok && !now.Before(e.expires) {
		delete(b.keys, key)
		return localEntry{}, false
	}
	return e, ok
}

func (b *localBackend) sweep(now time.Time) {
	if len(b.keys) < b.sweepAt {
		return
	}
	for k, e := range b.keys {
		if !now.Before(e.expires) {
			delete(b.keys, k)
		}
	}
	b.sweepAt = max(localSweepMin, 2*len(b.keys))
}

func (b *localBackend) acquire(ctx context.Context, s leaseSpec) (grant, error) {
	if err := ctx.Err(); err != nil {
		return grant{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.sweep(now)
	if e, ok := b.live(s.key, now); ok {
		return grant{}, parseHeld(s.key, e.value) // held, or a done marker
	}
	var g grant
	if s.claim {
		// As AcquireOp for a claim.
		fam, field := s.key.Family, s.key.Name
		if p := b.pauses[fam]; p.ActiveAt(now) {
			return grant{}, &PausedError{Key: s.key, Pause: p}
		}
		g.pause = b.pauses[fam]
		if l, ok := b.lives[fam][field]; ok && now.Before(l.expires) {
			return grant{}, parseHeld(s.key, l.value)
		}
		if c, ok := b.claims[fam][field]; ok {
			g.abandoned = parseAbandoned(s.key, c)
		} else {
			setIn(b.claims, fam, field, s.value)
		}
		setIn(b.lives, fam, field, localEntry{value: s.value, expires: now.Add(s.ttl)})
		var orphans []string
		for f := range b.claims[fam] {
			if l, ok := b.lives[fam][f]; f != field && (!ok || !now.Before(l.expires)) {
				orphans = append(orphans, f)
			}
		}
		if len(orphans) > 0 {
			// As the script: sorted, picked by the token.
			slices.Sort(orphans)
			n, _ := strconv.ParseUint(s.value[:6], 16, 64)
			f := orphans[n%uint64(len(orphans))]
			g.orphan = parseAbandoned(Key{Family: fam, Name: f}, b.claims[fam][f])
		}
		if s.also != nil && g.abandoned == nil {
			// As AcquireOp with Also: taken with a claim of our own.
			if _, held := b.live(s.also.key, now); !held {
				b.keys[s.also.key] = localEntry{value: s.also.value, expires: now.Add(s.ttl)}
				g.joined = true
			}
		}
	} else {
		b.keys[s.key] = localEntry{value: s.value, expires: now.Add(s.ttl)}
	}
	b.fences[s.key.Family]++
	g.token = b.fences[s.key.Family]
	return g, nil
}

// setIn sets m[a][b] = v, making m[a] when needed.
func setIn[V any](m map[string]map[string]V, a, b string, v V) {
	if m[a] == nil {
		m[a] = make(map[string]V)
	}
	m[a][b] = v
}

// deleteIn deletes m[a][b], and m[a] once empty.
func deleteIn[V any](m map[string]map[string]V, a, b string) {
	delete(m[a], b)
	if len(m[a]) == 0 {
		delete(m, a)
	}
}

func (b *localBackend) extend(ctx context.Context, s leaseSpec, start bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if s.claim {
		l, ok := b.lives[s.key.Family][s.key.Name]
		if !ok || l.value != s.value || !now.Before(l.expires) {
			return ErrLockLost
		}
		setIn(b.lives, s.key.Family, s.key.Name, localEntry{value: s.value, expires: now.Add(s.ttl)})
		if c := b.claims[s.key.Family][s.key.Name]; start && c == s.value {
			b.claims[s.key.Family][s.key.Name] = StartedPrefix + s.value
		}
		return nil
	}
	if e, ok := b.live(s.key, now); !ok || e.value != s.value {
		return ErrLockLost
	}
	b.keys[s.key] = localEntry{value: s.value, expires: now.Add(s.ttl)}
	return nil
}

// undoAcquired is release: one store, nothing left unanswered.
func (b *localBackend) undoAcquired(ctx context.Context, s leaseSpec) {
	_ = b.release(context.WithoutCancel(ctx), s, ending{also: s.also})
}

func (b *localBackend) release(ctx context.Context, s leaseSpec, e ending) (r released) {
	if err := ctx.Err(); err != nil {
		return released{err, err, err}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if s.claim && e.also != nil {
		r.also = b.releaseLocked(*e.also, ending{}, now)
	}
	if s.claim && e.recordN != 0 && e.recordN > b.records[e.record] {
		b.records[e.record] = e.recordN
	}
	r.err = b.releaseLocked(s, e, now)
	return r
}

// releaseLocked is release of s alone, with b.mu held.
func (b *localBackend) releaseLocked(s leaseSpec, e ending, now time.Time) error {
	done, doneTTL := e.done, e.doneTTL
	cur, curOK := b.live(s.key, now)
	if doneTTL > 0 && curOK && cur.value == done {
		return nil // a retry: the marker is already this one
	}
	if !s.claim {
		// As ReleaseOp for a plain lease.
		ours := curOK && cur.value == s.value
		switch {
		case doneTTL > 0 && (ours || !curOK):
			b.keys[s.key] = localEntry{value: done, expires: now.Add(doneTTL)}
		case ours:
			delete(b.keys, s.key)
		}
		if !ours {
			return ErrLockLost
		}
		return nil
	}
	// As ReleaseOp for a claim.
	fam, field := s.key.Family, s.key.Name
	claim, claimOK := b.claims[fam][field]
	claimOurs := claimOK && (claim == s.value || claim == StartedPrefix+s.value)
	l, liveOK := b.lives[fam][field]
	liveMine := liveOK && l.value == s.value
	if doneTTL > 0 && e.taken && !claimOurs && !liveMine && e.entry != nil && slices.ContainsFunc(b.logs[fam], func(x LogEntry) bool { return x.Value == e.entry.Value }) {
		return nil // a retry: the entry is added only where the lease was ours
	}
	liveOurs := false
	if liveMine {
		deleteIn(b.lives, fam, field)
		liveOurs = now.Before(l.expires)
	}
	if doneTTL > 0 {
		if claimOurs || !claimOK || liveOurs {
			deleteIn(b.claims, fam, field)
			if !curOK {
				b.keys[s.key] = localEntry{value: done, expires: now.Add(doneTTL)}
			}
			if e.entry != nil && (claimOurs || liveOurs || !e.taken) {
				b.logs[fam] = mergeLogs([][]LogEntry{{*e.entry}, b.logs[fam]}, e.keep)
			}
		}
	} else if claimOurs {
		deleteIn(b.claims, fam, field)
	}
	if !claimOurs && !liveOurs {
		return ErrLockLost
	}
	return nil
}

func (b *localBackend) advanceRecord(ctx context.Context, key Key, v int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if v > b.records[key] {
		b.records[key] = v
	}
	return nil
}

func (b *localBackend) readRecord(ctx context.Context, key Key) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.records[key], nil
}

func (b *localBackend) setPause(ctx context.Context, family string, p Pause) (Pause, error) {
	if err := ctx.Err(); err != nil {
		return Pause{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p.Version = max(b.pauses[family].Version+1, b.clock.Now().UnixMilli())
	b.pauses[family] = p
	return p, nil
}

func (b *localBackend) readPause(ctx context.Context, family string) (Pause, error) {
	if err := ctx.Err(); err != nil {
		return Pause{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pauses[family], nil
}

func (b *localBackend) readLog(ctx context.Context, family string, since int64, limit int) ([]LogEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []LogEntry
	for _, e := range b.logs[family] {
		if e.Score >= since && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (b *localBackend) appendLog(ctx context.Context, family string, a LogAppend) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.Token != 0 {
		// As LogAddOp fenced: the register refuses an older token.
		fence, token := Key{Family: family, Name: a.Fence}, int64(a.Token)
		if b.records[fence] > token {
			return ErrStaleToken
		}
		b.records[fence] = token
	}
	log := b.logs[family]
	if a.IfAbsent && slices.ContainsFunc(log, func(e LogEntry) bool { return e.Score == a.Entry.Score }) {
		return ErrLogHasEntry
	}
	if a.Replace != "" && a.Replace != a.Entry.Value {
		log = slices.DeleteFunc(log, func(e LogEntry) bool { return e.Value == a.Replace })
	}
	// One entry per value, as in a sorted set: the new score wins.
	log = slices.DeleteFunc(log, func(e LogEntry) bool { return e.Value == a.Entry.Value })
	log = mergeLogs([][]LogEntry{{a.Entry}, log}, len(log)+1)
	b.logs[family] = trimLog(log, a)
	return nil
}

func (b *localBackend) readClaims(ctx context.Context, family string) ([]Key, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var names []string
	for f := range b.claims[family] {
		names = append(names, f)
	}
	return claimKeys(family, names), nil
}

func (b *localBackend) handled(ctx context.Context, keys []Key) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]bool, len(keys))
	for i, k := range keys {
		e, ok := b.live(k, now)
		out[i] = ok && strings.HasPrefix(e.value, donePrefix)
	}
	return out, nil
}

func (b *localBackend) ping(ctx context.Context) ([]NodeStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return []NodeStatus{{Addr: "local", Up: true}}, nil
}

func (b *localBackend) mode() string { return "local" }

func (b *localBackend) size() (nodes, quorum int) { return 1, 1 }
func (b *localBackend) close() error              { return nil }
