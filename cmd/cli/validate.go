package cli

import (
	"encoding/json"
	"fmt"
)

func cmdValidate(args []string, env cmdEnv) int {
	f := newFlags("validate", env)
	verbose := f.Bool("v", false, "print the effective configuration (secrets redacted) when valid")
	if !f.parseNone(args, env) {
		return exitConfig
	}
	path := f.configPath(env)
	cfg, ok := loadConfig(path, env)
	if !ok {
		return exitConfig
	}
	if _, err := clockOffset(env.getenv); err != nil {
		fmt.Fprintln(env.Stderr, err)
		return exitConfig
	}
	fmt.Fprintf(env.Stdout, "%s: valid (%d jobs)\n", path, len(cfg.Jobs))
	if *verbose {
		out, err := json.MarshalIndent(cfg.Redacted(), "", "  ")
		if err != nil {
			fmt.Fprintln(env.Stderr, err)
			return exitFailure
		}
		fmt.Fprintln(env.Stdout, string(out))
	}
	return exitOK
}
