package redistest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// A failover that loses the latest writes. A managed Redis with high
// availability is a primary and a replica, and replication is
// asynchronous: when the primary is lost and the replica promoted, what
// the primary acknowledged in its last moments can be missing on the new
// one — and what it deleted then is back. Checkpoint copies a node's
// append-only file as it stands; StartFrom brings the node, killed since,
// back from that copy on its old port: it has lost every write it took
// after the checkpoint, as the promoted replica would have.

// A Checkpoint is a node's data as it was at one moment.
type Checkpoint struct {
	node int
	dir  string
}

// Checkpoint copies the node's append-only file. The node holds writes
// for the copy (CLIENT PAUSE WRITE, a few milliseconds: what it answered
// before is on disk, with appendfsync always) and goes on after it. The
// node must run with AppendOnly.
func (n *Node) Checkpoint() (*Checkpoint, error) {
	if !n.c.cfg.appendOnly && !n.c.cfg.aofNodes[n.idx] {
		return nil, fmt.Errorf("redistest: checkpoint of node %d: it has no append-only file (AppendOnly)", n.idx)
	}
	dir, err := os.MkdirTemp(n.dir, "checkpoint-")
	if err != nil {
		return nil, fmt.Errorf("redistest: checkpoint of node %d: %w", n.idx, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cl := n.Client()
	if err := cl.Do(ctx, "CLIENT", "PAUSE", 2000, "WRITE").Err(); err != nil {
		return nil, fmt.Errorf("redistest: checkpoint of node %d (%s): %w", n.idx, n.Addr(), err)
	}
	cp := &Checkpoint{node: n.idx, dir: dir}
	err = copyDir(filepath.Join(n.dir, "appendonlydir"), dir)
	if uerr := cl.Do(ctx, "CLIENT", "UNPAUSE").Err(); err == nil && uerr != nil {
		err = uerr
	}
	if err != nil {
		return nil, fmt.Errorf("redistest: checkpoint of node %d (%s): %w", n.idx, n.Addr(), err)
	}
	return cp, nil
}

// StartFrom starts a node that was killed or stopped, on its old port,
// with its append-only file replaced by the checkpoint's.
func (n *Node) StartFrom(cp *Checkpoint) error {
	if cp.node != n.idx {
		return fmt.Errorf("redistest: node %d: a checkpoint of node %d", n.idx, cp.node)
	}
	return n.startWithData(func() error {
		aof := filepath.Join(n.dir, "appendonlydir")
		err := os.RemoveAll(aof)
		if err == nil {
			err = copyDir(cp.dir, aof)
		}
		if err != nil {
			return fmt.Errorf("redistest: roll node %d back: %w", n.idx, err)
		}
		return nil
	})
}

// copyDir copies the regular files of directory from into to (created).
func copyDir(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		return err
	}
	return dst.Close()
}
