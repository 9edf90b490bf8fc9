package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/slotlock/slotlock/internal/config"
)

// defaultConfigPath is the configuration file a command reads when
// neither --config nor SLOTLOCK_CONFIG names one.
const defaultConfigPath = "config.yaml"

// loadStoreConfig loads the configuration of a command that acts on the
// fleet through the lock stores (status, history, pause, resume,
// backfill), printing every error. A file named by --config or
// SLOTLOCK_CONFIG, or config.yaml in the working directory, is loaded as
// for every command. With none of them the command still works on any
// fleet — the replicas publish their jobs in the stores, embedded ones
// included — from the defaults and the SLOTLOCK_* variables alone, which
// must then name the Redis nodes: in-process locks would show a fleet of
// nobody. false means a configuration error (exit 2).
func loadStoreConfig(f *flags, env cmdEnv) (*config.Config, bool) {
	if *f.config != "" || env.getenv("SLOTLOCK_CONFIG") != "" {
		return loadConfig(f.configPath(env), env)
	}
	if _, err := os.Lstat(defaultConfigPath); !errors.Is(err, fs.ErrNotExist) {
		return loadConfig(defaultConfigPath, env) // a file that exists, or one that cannot be checked: its error
	}
	cfg, err := config.Load("", env.Environ)
	if err != nil {
		printErrors(env, err)
		return nil, false
	}
	if len(cfg.Redis.Nodes) == 0 {
		fmt.Fprintf(env.Stderr, "slotlock %s: no configuration file and no Redis node: name the file with --config or "+
			"SLOTLOCK_CONFIG (or put config.yaml in the working directory), or the fleet's Redis nodes with "+
			"SLOTLOCK_REDIS__NODES=host:port,host:port,host:port\n", f.Name())
		return nil, false
	}
	return cfg, true
}
