// Package cli is slotlock's command — run, validate, next, trigger, pause,
// resume, history, status, backfill and version, as fixed by the outside
// contract.
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
// process needs neither this package nor a configuration file: it builds
// a [scheduler.Scheduler] and mounts [ops.Handler] on its own mux (package
// ops; examples/embed is such a service, whole). The command serves the
// same handler on http.addr.
package cli
