package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// opsServer serves the ops endpoints (ops.Handler) on http.addr.
type opsServer struct {
	srv *http.Server
	ln  net.Listener
}

func newOpsServer(addr string, handler http.Handler) (*opsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http.addr %q: %w", addr, err)
	}
	return &opsServer{
		// WriteTimeout: no answer (a status page window included, whose
		// reads ui bounds at 15s) holds a connection longer.
		srv: &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 20 * time.Second, IdleTimeout: time.Minute},
		ln: ln,
	}, nil
}

func (s *opsServer) Addr() string { return s.ln.Addr().String() }

func (s *opsServer) serve(log *slog.Logger) {
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("ops http server stopped", "error", err.Error())
	}
}

func (s *opsServer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}
