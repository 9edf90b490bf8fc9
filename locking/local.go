package locking

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

// NewLocal returns a Locker that keeps its locks in this process. It has
// the same semantics as Redlock — TTLs measured on opt.Clock, done markers,
// fencing tokens, records — so a scheduler cannot tell them apart, but it
// coordinates nothing beyond this process: it is for a single replica with
// no Redis. Its state is lost when the process exits.
func NewLocal(opt Options) Locker {
	opt = opt.WithDefaults()
	return newLocker(&localDriver{
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

// The in-process store is a driver like any other.
var _ driver.Driver = (*localDriver)(nil)

type localDriver struct {
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
func (b *localDriver) live(key Key, now time.Time) (localEntry, bool) {
	e, ok := b.keys[key]
	if ok && !now.Before(e.expires) {
		delete(b.keys, key)
		return localEntry{}, false
	}
	return e, ok
}

func (b *localDriver) sweep(now time.Time) {
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

func (b *localDriver) Acquire(ctx context.Context, s driver.Lease) (driver.Grant, error) {
	if err := ctx.Err(); err != nil {
		return driver.Grant{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.sweep(now)
	if e, ok := b.live(s.Key, now); ok {
		return driver.Grant{}, driver.ParseHeld(s.Key, e.value) // held, or a done marker
	}
	var g driver.Grant
	if s.Claim {
		// As AcquireOp for a claim.
		fam, field := s.Key.Family, s.Key.Name
		p := b.pauses[fam]
		g.Pause = p
		if l, ok := b.lives[fam][field]; ok && now.Before(l.expires) {
			if p.ActiveAt(now) {
				// As the Redis driver: the run's refusal goes with the
				// pause, which may have begun after that run's work.
				return driver.Grant{}, &PausedError{Key: s.Key, Pause: p, Refusal: driver.ParseHeld(s.Key, l.value)}
			}
			return driver.Grant{}, driver.ParseHeld(s.Key, l.value)
		}
		if c, ok := b.claims[fam][field]; ok {
			// Taken over even while paused: settling starts no work.
			g.Abandoned = driver.ParseAbandoned(s.Key, c)
			g.Abandoned.Majority = true // the one store
		} else if p.ActiveAt(now) {
			return driver.Grant{}, &PausedError{Key: s.Key, Pause: p}
		} else {
			setIn(b.claims, fam, field, s.Value)
		}
		setIn(b.lives, fam, field, localEntry{value: s.Value, expires: now.Add(s.TTL)})
		var orphans []string
		for f := range b.claims[fam] {
			if l, ok := b.lives[fam][f]; f != field && (!ok || !now.Before(l.expires)) {
				orphans = append(orphans, f)
			}
		}
		if len(orphans) > 0 {
			// As the script: sorted, picked by the token.
			slices.Sort(orphans)
			n, _ := strconv.ParseUint(s.Value[:6], 16, 64)
			f := orphans[n%uint64(len(orphans))]
			g.Orphan = driver.ParseAbandoned(Key{Family: fam, Name: f}, b.claims[fam][f])
		}
		if s.Also != nil && g.Abandoned == nil {
			// As AcquireOp with Also: taken with a claim of our own.
			if _, held := b.live(s.Also.Key, now); !held {
				b.keys[s.Also.Key] = localEntry{value: s.Also.Value, expires: now.Add(s.TTL)}
				g.Joined = true
			}
		}
	} else {
		b.keys[s.Key] = localEntry{value: s.Value, expires: now.Add(s.TTL)}
	}
	// Tokens rise with the clock's microseconds as well as by one: the
	// state is lost when the process exits, and a restarted process that
	// counted from 1 again would hand out tokens below those a fence
	// guard already keeps — refused, every write of the restarted run.
	// (Below 2^53 until the year 2255: they stay exact in JSON.)
	f := s.Key.Family
	b.fences[f] = max(b.fences[f]+1, uint64(max(now.UnixMicro(), 0)))
	g.Token = b.fences[f]
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

func (b *localDriver) Extend(ctx context.Context, s driver.Lease, start bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if s.Claim {
		l, ok := b.lives[s.Key.Family][s.Key.Name]
		if !ok || l.value != s.Value || !now.Before(l.expires) {
			return ErrLockLost
		}
		setIn(b.lives, s.Key.Family, s.Key.Name, localEntry{value: s.Value, expires: now.Add(s.TTL)})
		if c := b.claims[s.Key.Family][s.Key.Name]; start && c == s.Value {
			b.claims[s.Key.Family][s.Key.Name] = wire.StartedPrefix + s.Value
		}
		return nil
	}
	if e, ok := b.live(s.Key, now); !ok || e.value != s.Value {
		return ErrLockLost
	}
	b.keys[s.Key] = localEntry{value: s.Value, expires: now.Add(s.TTL)}
	return nil
}

// UndoAcquired is release: one store, nothing left unanswered.
func (b *localDriver) UndoAcquired(ctx context.Context, s driver.Lease) {
	_ = b.Release(context.WithoutCancel(ctx), s, driver.End{Also: s.Also})
}

func (b *localDriver) Release(ctx context.Context, s driver.Lease, e driver.End) (r Released) {
	if err := ctx.Err(); err != nil {
		return Released{Err: err, Also: err, Record: err}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if s.Claim && e.Also != nil {
		r.Also = b.releaseLocked(*e.Also, driver.End{}, now)
	}
	if s.Claim && e.RecordValue != 0 && e.RecordValue > b.records[e.Record] {
		b.records[e.Record] = e.RecordValue
	}
	r.Err = b.releaseLocked(s, e, now)
	return r
}

// releaseLocked is release of s alone, with b.mu held.
func (b *localDriver) releaseLocked(s driver.Lease, e driver.End, now time.Time) error {
	done, doneTTL := e.Done, e.DoneTTL
	cur, curOK := b.live(s.Key, now)
	if doneTTL > 0 && curOK && cur.value == done {
		return nil // a retry: the marker is already this one
	}
	if !s.Claim {
		// As ReleaseOp for a plain lease.
		ours := curOK && cur.value == s.Value
		switch {
		case doneTTL > 0 && (ours || !curOK):
			b.keys[s.Key] = localEntry{value: done, expires: now.Add(doneTTL)}
		case ours:
			delete(b.keys, s.Key)
		}
		if !ours {
			return ErrLockLost
		}
		return nil
	}
	// As ReleaseOp for a claim.
	fam, field := s.Key.Family, s.Key.Name
	claim, claimOK := b.claims[fam][field]
	claimOurs := claimOK && (claim == s.Value || claim == wire.StartedPrefix+s.Value)
	l, liveOK := b.lives[fam][field]
	liveMine := liveOK && l.value == s.Value
	if doneTTL > 0 && e.Taken && !claimOurs && !liveMine && e.Entry != nil && slices.ContainsFunc(b.logs[fam], func(x LogEntry) bool { return x.Value == e.Entry.Value }) {
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
				b.keys[s.Key] = localEntry{value: done, expires: now.Add(doneTTL)}
			}
			if e.Entry != nil && (claimOurs || liveOurs || !e.Taken) {
				b.logs[fam] = driver.InsertLog(b.logs[fam], *e.Entry, e.Keep)
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

func (b *localDriver) AdvanceRecord(ctx context.Context, key Key, v int64) error {
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

func (b *localDriver) SetPause(ctx context.Context, family string, p Pause) (Pause, error) {
	if err := ctx.Err(); err != nil {
		return Pause{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p.Version = max(b.pauses[family].Version+1, b.clock.Now().UnixMilli())
	p = b.pauses[family].Succeed(p)
	b.pauses[family] = p
	return p, nil
}

func (b *localDriver) AppendLog(ctx context.Context, family string, a LogAppend) error {
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
	b.logs[family] = driver.TrimLog(driver.InsertLog(log, a.Entry, len(log)+1), a)
	return nil
}

func (b *localDriver) Ping(ctx context.Context) ([]NodeStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return []NodeStatus{{Addr: "local", Up: true}}, nil
}

func (b *localDriver) Mode() string { return "local" }

func (b *localDriver) Size() (nodes, quorum int) { return 1, 1 }
func (b *localDriver) Close() error              { return nil }
