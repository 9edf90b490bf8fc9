// Command slotlock is a distributed cron: every replica runs the same jobs,
// and each schedule slot runs exactly once across them. See README.md, docs/
// and `slotlock help`.
package main

import (
	"os"

	"github.com/slotlock/slotlock/cmd/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
