// Package ops serves the operations side of a scheduler embedded in your
// own service — the probes, the Prometheus metrics, the read-only status
// page and its JSON API, what `slotlock run` serves on http.addr — as one
// http.Handler for your own mux. It links neither the command nor its
// configuration loader, cloud credentials or trace exporters, nor any
// package that looks methods up by reflection: a test holds a service built
// on it (examples/embed) to 20 modules and 15 MiB stripped.
//
// # Mount the handler
//
// Give the scheduler a Metrics to report to, build the handler over the
// scheduler, mount it under a prefix of your mux, and run the scheduler:
//
//	s, err := scheduler.New(scheduler.Config{
//		Locker:  lk, // redlock.New(..., locking.Options{Replica: name}): the one place the name is given
//		Metrics: ops.NewMetrics(),
//		Jobs:    []scheduler.JobSpec{{Name: "report", Spec: "@every 1m", Job: report}},
//	})
//	mux.Handle("/ops/", http.StripPrefix("/ops", ops.Handler(s, ops.Options{StatusPage: true})))
//	err = s.Run(ctx)
//
// The handler starts no goroutine: a probe or a scrape pings the lock
// stores when their last answer is older than a second, and the job series
// and the page follow the scheduler's reloads. The package's Example asks
// each endpoint once; ExampleHandler is a whole service.
//
// # Probes
//
// GET /healthz is the liveness probe: 200 "ok" while the scheduler's loop
// runs and ticks, 503 before Run, after it and when the loop is stuck —
// restart the process. GET /readyz is the readiness probe: 200 while the
// scheduler runs and a majority of the lock stores answers, 503 before Run,
// during the shutdown grace and without a quorum (the body says how many
// nodes answered) — take the replica out of rotation: it fires no slot
// then.
//
// # Metrics
//
// GET /metrics exports, in the Prometheus text format, the Metrics'
// registry (its own, not prometheus.DefaultRegisterer): the slotlock_*
// series — runs and their duration, skipped and missed slots with their
// reason, start delay, lock latency, leases lost, runs abandoned, pauses,
// each job's last outcome and last success, each Redis node up, ready —
// and the Go runtime's. The alert rules and the Grafana dashboard in the
// repository's deploy/ read these names. The three histograms have a
// series per job; with thousands of jobs, NewMetricsWith(MetricsOptions{
// JoblessHistograms: true}) keeps one for all jobs (what
// http.job_histograms: false does in the command).
//
// # Status page and JSON API
//
// With Options.StatusPage every other path serves the status page:
//
//	GET /                                 jobs, a job's slot timeline, live replicas, control actions
//	GET /api/v1/jobs[?job=SUB&limit=N&offset=N]
//	                                      what `slotlock status --json` prints, paged
//	GET /api/v1/jobs/{job}/slots[?since=DUR|TIME&until=DUR|TIME&limit=N]
//	                                      every nominal slot of a window with its history entry
//
// It is read-only, rate limited per client and in all, and served under a
// Content-Security-Policy that allows no script but its own. It shows job
// names, schedules, replica names and run ids: mount it where only
// operators reach it.
//
// # From a shell
//
// The replicas publish their jobs in the lock stores, so the slotlock
// command works on your service's fleet with no configuration file, the
// Redis nodes alone in the environment:
//
//	SLOTLOCK_REDIS__NODES=cache-a:6379,cache-b:6379,cache-c:6379 slotlock history report
//
// status, history, pause and resume act on the embedded jobs as on the
// command's own; trigger and backfill run a job's body, which only your
// service has (Scheduler.Trigger, Scheduler.PlanBackfill and RunSlot).
package ops
