package jobs

import (
	"sync"
	"unicode/utf8"
)

// tailBuffer is an io.Writer that keeps only the last max bytes written,
// and counts all of them. Safe for concurrent use.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte // ring storage, len(buf) <= max
	start int    // index of the oldest byte once the ring is full
	total int64
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		t.start = 0
		return n, nil
	}
	for len(p) > 0 {
		if len(t.buf) < t.max {
			k := min(t.max-len(t.buf), len(p))
			t.buf = append(t.buf, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(t.buf[t.start:], p)
		p = p[k:]
		t.start = (t.start + k) % t.max
	}
	return n, nil
}

// Bytes returns a copy of the retained tail, oldest byte first.
func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.start:]...)
	return append(out, t.buf[:t.start]...)
}

// String returns the retained tail without a partial UTF-8 sequence at its
// start (the cut may fall inside a character).
func (t *tailBuffer) String() string {
	b := t.Bytes()
	if t.Total() > int64(len(b)) {
		cut := 0
		for cut < len(b) && cut < utf8.UTFMax && !utf8.RuneStart(b[cut]) {
			cut++
		}
		b = b[cut:]
	}
	return string(b)
}

// Total is the number of bytes ever written.
func (t *tailBuffer) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}
