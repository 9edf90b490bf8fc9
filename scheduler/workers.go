package scheduler

import "sync"

// The goroutines of deep work (spawnDeep: a slot's claim, run and end)
// are reused while the scheduler runs. A fresh goroutine for every slot
// paid, at 1,000 every-second jobs, for a new stack from the runtime's
// pool, its growth to the lock path's depth, the goroutine's creation and,
// at each collection, the scan and shrink of thousands of short-lived
// stacks: together about a sixth of a replica's CPU (BenchmarkScale's
// profile). A worker that finished its slot parks, and the next slot's
// work is handed to it with its stack already grown.
//
// Parked workers are few and bounded (maxIdleWorkers): a burst of slots
// starts as many goroutines as it needs, and those past the bound end
// when their slot does. Only a running scheduler parks workers — outside
// Run (a test driving admission directly) each piece of work has a
// goroutine of its own, as spawn's — and Run's end makes them all end.

// maxIdleWorkers bounds the workers parked at once: enough for the
// attempts an every-second load keeps in flight, few enough that their
// stacks (tens of KB each, shrunk by the collector while parked) stay
// small beside the replica's heap.
const maxIdleWorkers = 128

// workerPool is the parked workers of a scheduler.
type workerPool struct {
	mu   sync.Mutex
	on   bool          // Run is running: finished workers may park
	idle []chan func() // parked workers, the last parked first (its stack is warm)
	stop chan struct{} // closed by close: parked workers end
	wg   sync.WaitGroup
}

// open lets finished workers park: Run has started.
func (p *workerPool) open() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on, p.stop = true, make(chan struct{})
}

// close ends the parked workers and makes the others end when their work
// does; wait: and waits for them all (a stuck run's worker never ends).
func (p *workerPool) close(wait bool) {
	p.mu.Lock()
	if p.on {
		p.on, p.idle = false, nil
		close(p.stop)
	}
	p.mu.Unlock()
	if wait {
		p.wg.Wait()
	}
}

// run runs f on a parked worker, or on a new one; f is tracked work (its
// done is the caller's, inside f).
func (p *workerPool) run(f func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		ch := p.idle[n-1]
		p.idle = p.idle[:n-1]
		// Sent under the lock (1-buffered and empty: it does not block),
		// so that a close cannot come between: its worker finds f.
		ch <- f
		p.mu.Unlock()
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go p.work(f, make(chan func(), 1))
}

// work runs f, then parks for more until there is no place or the pool
// closes. Each piece of work first grows the stack while it is shallow
// (growStack): the collector may have shrunk it while it was parked.
func (p *workerPool) work(f func(), ch chan func()) {
	defer p.wg.Done()
	for {
		growStack()
		f()
		stop, ok := p.park(ch)
		if !ok {
			return
		}
		if f, ok = next(ch, stop); !ok {
			return
		}
	}
}

// next waits for a parked worker's next piece of work; false: the pool
// closed. Work handed over just before the close (the worker, parked,
// had not reached its wait yet) is still done.
func next(ch <-chan func(), stop <-chan struct{}) (func(), bool) {
	select {
	case f := <-ch:
		return f, true
	case <-stop:
		select {
		case f := <-ch:
			return f, true
		default:
			return nil, false
		}
	}
}

// park puts a finished worker among the idle ones, unless the pool is
// closed or full; it returns what tells the worker the pool closed.
func (p *workerPool) park(ch chan func()) (<-chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on || len(p.idle) >= maxIdleWorkers {
		return nil, false
	}
	p.idle = append(p.idle, ch)
	return p.stop, true
}
