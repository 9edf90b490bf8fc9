//go:build linux

// Package e2e is slotlock's multi-process acceptance suite: it builds the
// slotlock binary, starts real redis-server nodes and several `slotlock run`
// replicas as separate processes, injects real faults (SIGKILL, SIGSTOP of a
// replica's process tree — at once, or on a duty cycle as a CPU quota
// throttles it — SIGTERM rolling restarts, Redis nodes killed, paused or
// with their writes paused, a TCP proxy adding latency, blackholing,
// resetting or losing only the replies, clock offsets, an all-down gap)
// and judges each scenario with a checker over a ledger the jobs write and
// the replicas' JSON audit logs.
//
//	go test ./e2e/                                     # the short scenarios, ~2.5 min on 2 cores
//	go test ./e2e/ -run 'TestSoak$' -soak 10m -timeout 30m -v   # random faults, printed seed
//	go test ./e2e/ -run TestScale -scale -scale.jobs 100,1000,5000 -v -timeout 30m  # scale table (docs/performance.md)
//	go test -short ./...                               # skips this suite
//
// What the suite guarantees: any duplicate run of a slot, miss outside a
// fault window the scenario declares, overlap of an overlap: forbid job
// (except a frozen replica's stale run canceled on waking), fencing-token
// order violation, unexplained slot or ledger/log mismatch fails the run
// (a pause of the whole host longer than the lateness bound — a VM
// snapshot — is a fault window the harness declares itself, hostpause.go);
// every process it starts is stopped by PID, also when a test fails, and is
// killed by the kernel if the test binary dies. What it does not: it injects
// one fault at a time, runs on Linux only (/proc, process groups,
// PDEATHSIG), and needs redis-server on PATH (and PostgreSQL for the
// fencing scenario's postgres guard: TestFencedWrites, fence_test.go, where
// a replica frozen mid-run wakes and its write is refused by each guard).
package e2e
