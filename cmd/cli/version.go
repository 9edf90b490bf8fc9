package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time: -ldflags "-X github.com/slotlock/slotlock/cmd/cli.version=v1.2.3 -X ...cli.commit=abc123".
var (
	version = ""
	commit  = ""
)

type stamp struct{ version, commit, goVersion string }

// buildInfo prefers the values stamped by -ldflags, then the module and VCS
// information the Go toolchain records, then "dev"/"unknown".
func buildInfo() stamp {
	b := stamp{version: version, commit: commit, goVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && b.commit == "" {
				b.commit = s.Value
			}
		}
	}
	if b.version == "" {
		b.version = "dev"
	}
	if b.commit == "" {
		b.commit = "unknown"
	}
	return b
}

func cmdVersion(env cmdEnv) int {
	b := buildInfo()
	fmt.Fprintf(env.Stdout, "slotlock %s\ncommit %s\n%s\n", b.version, b.commit, b.goVersion)
	return exitOK
}
