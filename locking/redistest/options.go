package redistest

import (
	"strconv"
	"time"
)

// The options of a Cluster, and the redis-server command line they give
// each node.

// Option configures the nodes of a Cluster.
type Option func(*config)

type config struct {
	appendOnly bool
	aofNodes   map[int]bool
	tls        bool
	password   string
	user       string
	readyWait  time.Duration
	extraArgs  []string
	// clusterMode: every node is a master of one Redis Cluster
	// (shards.go), with its bus on a port of its own.
	clusterMode bool
	steppable   bool // under the clock shim (clock.go)
}

// AppendOnly gives every node an append-only file (appendfsync always) in
// its own temporary directory, so Restart and even Kill keep the data
// already acknowledged.
func AppendOnly() Option { return func(c *config) { c.appendOnly = true } }

// AppendOnlyOn is AppendOnly for the listed nodes only (0-based); the
// others run without persistence.
func AppendOnlyOn(nodes ...int) Option {
	return func(c *config) {
		if c.aofNodes == nil {
			c.aofNodes = map[int]bool{}
		}
		for _, i := range nodes {
			c.aofNodes[i] = true
		}
	}
}

// TLS makes every node listen with TLS only. A throwaway CA and a server
// certificate for 127.0.0.1 and localhost are generated in Go;
// Cluster.ClientTLS returns a client config that trusts them.
func TLS() Option { return func(c *config) { c.tls = true } }

// Password sets requirepass on every node (the "default" user).
func Password(pw string) Option { return func(c *config) { c.password = pw } }

// User creates an ACL user with full rights and password pw on every node
// and disables the "default" user, so only that user can connect.
func User(name, pw string) Option {
	return func(c *config) { c.user, c.password = name, pw }
}

// Args appends raw redis-server arguments to every node's command line.
func Args(args ...string) Option {
	return func(c *config) { c.extraArgs = append(c.extraArgs, args...) }
}

func (n *Node) args() []string {
	cfg := n.c.cfg
	a := []string{
		"--bind", "127.0.0.1",
		"--dir", n.dir,
		"--save", "",
		"--daemonize", "no",
		"--logfile", "",
		"--loglevel", "notice",
		"--protected-mode", "no",
		"--databases", "1",
	}
	if cfg.appendOnly || cfg.aofNodes[n.idx] {
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		a = append(a, "--appendonly", "no")
	}
	if cfg.tls {
		a = append(a,
			"--port", "0",
			"--tls-port", strconv.Itoa(n.port),
			"--tls-cert-file", n.c.tlsCA.certFile,
			"--tls-key-file", n.c.tlsCA.keyFile,
			"--tls-ca-cert-file", n.c.tlsCA.caFile,
			"--tls-auth-clients", "no",
		)
	} else {
		a = append(a, "--port", strconv.Itoa(n.port))
	}
	switch {
	case cfg.user != "":
		// Each word is its own argv element: redis-server joins the
		// words after an option into one config line.
		a = append(a,
			"--user", cfg.user, "on", ">"+cfg.password, "~*", "&*", "+@all",
			"--user", "default", "off",
		)
	case cfg.password != "":
		a = append(a, "--requirepass", cfg.password)
	}
	if cfg.clusterMode {
		// The bus port is set, not left at port+10000: a free port above
		// 55535 would give none. The node timeout is short so that a test
		// sees a killed shard marked failed within a few seconds; Args can
		// override it (the later word wins).
		a = append(a,
			"--cluster-enabled", "yes",
			"--cluster-port", strconv.Itoa(n.busPort),
			"--cluster-node-timeout", "2000",
		)
	}
	return append(a, cfg.extraArgs...)
}
