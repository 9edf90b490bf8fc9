// Command greeter is slotlock with one extra plugin: the whole of a user's
// own binary. Build it with `go build ./examples/greeter/cmd/greeter`.
package main

import (
	"os"

	"github.com/slotlock/slotlock/cmd/cli"
	_ "github.com/slotlock/slotlock/examples/greeter/greet" // registers "greet"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
