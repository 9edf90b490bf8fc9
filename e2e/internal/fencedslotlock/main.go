//go:build unix

// Command fencedslotlock is slotlock with the e2e suite's plugin "fenced"
// (e2e/internal/fencedjob) besides the built-in ones, the way a user's own
// binary adds plugins (examples/greeter). The suite's fencing scenarios
// run it as their replicas.
package main

import (
	"os"

	"github.com/slotlock/slotlock/cmd/cli"
	_ "github.com/slotlock/slotlock/e2e/internal/fencedjob" // registers "fenced"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
