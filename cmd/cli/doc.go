// Package cli is slotlock's command — run, validate, next, trigger, pause,
// resume, history, status, backfill and version, as fixed by the outside
// contract — and the operations side of a scheduler embedded in a service.
//
// # Your own binary
//
// The slotlock binary is one call to [Main]. A binary of your own adds
// plugins (package jobs) by importing them; everything else — the
// configuration file, the environment, the commands, the ops HTTP server —
// stays as documented:
//
//	package main
//
//	import (
//		"os"
//
//		"github.com/slotlock/slotlock/cmd/cli"
//		_ "example.com/myteam/myplugins" // registers plugins in init
//	)
//
//	func main() { os.Exit(cli.Main(os.Args[1:])) }
//
// # The scheduler inside a service
//
// A Go service that wants exactly-once scheduled functions in its own
// process needs no binary and no configuration file: it builds a
// [scheduler.Config] whose Locker is a [locking.Backend] — a
// [locking.Locker] and the [locking.Store] on the same stores, as
// [redlock.New] over independent Redis nodes returns it — and jobs
// ([scheduler.JobSpec]) whose Job is a jobs.Func, then hands it to
// [NewOps] instead of [scheduler.New]:
//
//	s, ops, err := cli.NewOps(cfg, cli.OpsOptions{StatusPage: true})
//	mux.Handle("/ops/", http.StripPrefix("/ops", ops))
//	err = ops.Run(ctx) // fires slots until ctx ends
//
// The [Ops] serves what `slotlock run` serves on http.addr — /healthz,
// /readyz, /metrics and the status page — and s takes Trigger, Reload
// and the other calls of package scheduler. examples/embed is such a
// service, whole.
package cli
