package scheduler

import (
	"flag"
	"fmt"
)

// realTimeAtOnce is how many parallel tests the package runs at once
// unless -test.parallel says otherwise: the tests on real Redis
// (realTimeNodes, the other TestRedis tests) wait on the real clock for
// almost all of their time — 14 of them took 12 s of CPU in 170 s of wall
// two at a time (the default, GOMAXPROCS, on 2 cores) — so they run four
// at a time. Not all at once: 14 tests starting together (42 redis-server
// and their clients) starved a test's first dial past its timeout on 2
// cores. The simulation's worlds, the package's other parallel tests,
// keep one a core by themselves (simSlots in sim_test.go).
const realTimeAtOnce = 4

// raiseParallel sets -test.parallel to realTimeAtOnce when the command
// line did not set it. It runs after flag.Parse and before m.Run, which
// sizes its semaphore from the flag.
func raiseParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", fmt.Sprint(realTimeAtOnce)); err != nil {
			panic(err)
		}
	}
}
