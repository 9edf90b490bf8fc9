//go:build !race

package scheduler_test

// Simulated hours per seed, and of each replay of TestSimulationReplaysItsSeed,
// by default (sim_span_race_test.go: shorter under the race detector).
const (
	simDefaultHours       = 24
	simDefaultReplayHours = 3
)
