package smallworld

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
)

// stateKey hashes what decides the world's future: the stores' contents,
// the requests in flight, each process's progress (its code is
// deterministic in the answers it got and the steps it took), the clock,
// the faults spent and the ledger the invariants read. Random tokens are
// renamed by who drew them (the same in every path), and their order by
// value is kept: the client breaks ties by value. Processes that run the
// same program are interchangeable: the key is the least over renamings
// of the replicas among themselves and of the settlers among themselves.
//
// It also returns the renaming that gives the key: the explorer keeps the
// actions asleep at a state in those names, so that they mean the same
// whichever of the interchangeable states it reached.
func (w *world) stateKey() ([16]byte, renaming) {
	w.mu.Lock()
	w.canonicalK()
	lines := w.stateLines()
	text := w.canonical(strings.Join(lines, "\n"))
	w.mu.Unlock()
	var best [16]byte
	var bestR renaming
	for i, r := range w.cfg.renamings() {
		ls := strings.Split(r.apply(text), "\n")
		slices.Sort(ls)
		sum := sha256.Sum256([]byte(strings.Join(ls, "\n")))
		if i == 0 || bytes.Compare(sum[:16], best[:]) < 0 {
			copy(best[:], sum[:16])
			bestR = r
		}
	}
	return best, bestR
}

// stateLines describes the state, one self-describing line per item (so
// that sorting them loses nothing); w.mu is held.
func (w *world) stateLines() []string {
	out := []string{fmt.Sprintf("world t%d a%d f%d %v %v %v %v forbid=%v", w.ticks, w.aged, w.spent, w.frozen, w.froze, w.wiped, w.failed, w.forbid)}
	out = append(out, w.beforeLines()...)
	for i, s := range w.stores {
		for _, l := range strings.Split(s.Snapshot(), "\n") {
			out = append(out, fmt.Sprintf("s%d %s", i, l))
		}
	}
	for _, r := range w.pending {
		out = append(out, fmt.Sprintf("req %s await=%v lost=%v %+v", r.id(), r.awaited, r.lost, r.op))
	}
	for _, a := range w.actors {
		hold := ""
		if a.holding != nil {
			hold = a.holding.id
		}
		out = append(out, fmt.Sprintf("actor %s gate=%q[%d,%d,%d] steps=%d st=%v done=%v dead=%v paused=%v hold=%s def=%s claims=%d",
			a.name, a.atGate, a.gateMin, a.gateMax, a.gateAge, a.steps, a.started, a.done, a.dead, a.paused, hold, a.def, a.claims))
		for _, o := range a.obs {
			out = append(out, "obs "+a.name+" "+o)
		}
	}
	out = append(out, w.ledgerLines()...)
	return append(out, w.tokenOrder())
}

// ledgerLines describe the ledger, as a set: the invariants do not
// depend on the order of its lines.
func (w *world) ledgerLines() []string {
	var out []string
	for _, g := range w.grants {
		out = append(out, fmt.Sprintf("grant %s %d %s %d lost=%v taken=%v", g.actor, g.slot, g.id, g.token, g.lost, g.taken))
	}
	for _, r := range w.runs {
		out = append(out, fmt.Sprintf("run %v", r))
	}
	for _, r := range w.reports {
		out = append(out, fmt.Sprintf("report %v", r))
	}
	for _, b := range w.bodies {
		// The order of begin and end is what checkOverlap reads, not the
		// step numbers.
		out = append(out, fmt.Sprintf("body %s %d %s ended=%v overlaps=%v", b.actor, b.slot, b.def, b.end >= 0, w.overlapping(b)))
	}
	return out
}

// tokenOrder lists the tokens' names in the order of their values.
func (w *world) tokenOrder() string {
	toks := make([]string, 0, len(w.tokens))
	for t := range w.tokens {
		toks = append(toks, t)
	}
	slices.Sort(toks)
	out := "tokens"
	for _, t := range toks {
		out += " " + w.tokens[t]
	}
	return out
}

// canonical renames every token (and its 16-character lease id) in s by
// who drew it: every run of 16 or 32 lower-case hex digits that is one.
func (w *world) canonical(s string) string {
	if len(w.tokens) == 0 {
		return s
	}
	byID := make(map[string]string, len(w.tokens))
	for t, name := range w.tokens {
		byID[t[:16]] = name
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && isHex(s[j]) {
			j++
		}
		if n := j - i; n == 16 || n == 32 {
			if name, ok := byID[s[i:i+16]]; ok {
				b.WriteString(name)
				i = j
				continue
			}
		}
		if j == i {
			j++
		}
		b.WriteString(s[i:j])
		i = j
	}
	return b.String()
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// A renaming maps process names to process names.
type renaming map[string]string

// apply renames the processes in s: every name is an upper-case letter
// and a digit (R1, S2), which nothing else in a state's text is.
func (r renaming) apply(s string) string {
	b := []byte(s)
	for i := 0; i+1 < len(b); i++ {
		if c := b[i]; (c == 'R' || c == 'S') && '0' <= b[i+1] && b[i+1] <= '9' {
			if to, ok := r[string(b[i:i+2])]; ok {
				b[i], b[i+1] = to[0], to[1]
			}
			i++
		}
	}
	return string(b)
}

// actions renames the processes of xs (inverse: the other way).
func (r renaming) actions(xs []action, inverse bool) []action {
	m := r
	if inverse {
		m = renaming{}
		for from, to := range r {
			m[to] = from
		}
	}
	out := make([]action, len(xs))
	for i, x := range xs {
		if to, ok := m[x.actor]; ok {
			x.actor = to
		}
		out[i] = x
	}
	return out
}

// renamings are the permutations of the replicas' names among themselves
// and of the settlers' among themselves.
func (c worldConfig) renamings() []renaming {
	var out []renaming
	for _, rp := range permutations(c.replicas) {
		for _, sp := range permutations(c.settlers) {
			r := renaming{}
			for i, n := range c.replicas {
				r[n] = rp[i]
			}
			for i, n := range c.settlers {
				r[n] = sp[i]
			}
			out = append(out, r)
		}
	}
	return out
}

func permutations(xs []string) [][]string {
	if len(xs) <= 1 {
		return [][]string{slices.Clone(xs)}
	}
	var out [][]string
	for i := range xs {
		rest := append(slices.Clone(xs[:i]), xs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]string{xs[i]}, p...))
		}
	}
	return out
}
