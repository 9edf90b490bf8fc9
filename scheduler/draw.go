package scheduler

import (
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"time"
)

// random draws a number for what (a lock key: the retry waits of its
// acquisitions, a manual run's key name) from math/rand/v2, or from draw
// when a test set it: the simulation draws from its seed, per key, so that
// a replay of a seed waits as long whatever order the replica's
// goroutines ran in.
func (e *engine) random(what string) uint64 {
	if e.draw != nil {
		return e.draw(what)
	}
	return rand.Uint64()
}

// randomN is a duration in [0, n) drawn for what; n > 0.
func (e *engine) randomN(what string, n time.Duration) time.Duration {
	return time.Duration(e.random(what) % uint64(n))
}

// instanceID tells this process's heartbeats from an earlier process's of
// the same replica: 8 bytes from crypto/rand, or from draw when a test set
// it.
func (e *engine) instanceID() string {
	var b [8]byte
	if e.draw != nil {
		binary.LittleEndian.PutUint64(b[:], e.draw("instance"))
	} else {
		_, _ = crand.Read(b[:])
	}
	return hex.EncodeToString(b[:])
}
