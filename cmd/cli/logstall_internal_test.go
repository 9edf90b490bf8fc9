package cli

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// blockingWriter blocks every write while its gate is closed.
type blockingWriter struct {
	mu   sync.Mutex
	gate chan struct{}
	got  strings.Builder
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	gate := b.gate
	b.mu.Unlock()
	<-gate
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got.Write(p)
}

// The replica is unfit once its log output has made no progress for the
// limit while a write is pending, and fit again as soon as it drains; a
// slow but moving output, and an idle one, are fit.
func TestLogWatchUnfitWhileOutputBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		open := make(chan struct{})
		close(open)
		bw := &blockingWriter{gate: open}
		lw := newLogWatch(bw, locking.SystemClock(0), stallAfter(3*time.Second))
		if lw.after != 1500*time.Millisecond {
			t.Fatalf("limit %v for a 3s TTL, want 1.5s", lw.after)
		}
		lw.Write([]byte("a\n"))
		time.Sleep(time.Hour)
		if err := lw.Fit(); err != nil {
			t.Fatalf("an idle output is unfit: %v", err)
		}

		shut := make(chan struct{})
		bw.mu.Lock()
		bw.gate = shut
		bw.mu.Unlock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			lw.Write([]byte("b\n"))
		}()
		time.Sleep(time.Second)
		if err := lw.Fit(); err != nil {
			t.Fatalf("a write pending for 1s, under the limit: %v", err)
		}
		time.Sleep(time.Second)
		err := lw.Fit()
		if err == nil || !strings.Contains(err.Error(), "log output blocked for 2s") {
			t.Fatalf("a write pending for 2s: %v, want unfit naming how long", err)
		}
		close(shut)
		<-done
		if err := lw.Fit(); err != nil {
			t.Fatalf("drained, still unfit: %v", err)
		}
		if bw.got.String() != "a\nb\n" {
			t.Fatalf("lines %q: a blocked line was lost", bw.got.String())
		}
	})
}
