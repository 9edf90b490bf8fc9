//go:build race

package scheduler_test

// Under the race detector a simulated hour costs about five times as much,
// so the default worlds are short there: what the detector adds is a data
// race on the simulation's code paths, and in 3 hours each seed of
// TestSimulation and TestSimulationViews draws every fault kind and
// operator action. The long worlds are the defaults without the detector
// (sim_span_norace_test.go), which .ci/test runs after its race stage.
const (
	simDefaultHours       = 3
	simDefaultReplayHours = 1
)
