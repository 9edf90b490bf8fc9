package cli

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The ops server bounds how long an answer may take to write.
func TestOpsServerTimeouts(t *testing.T) {
	s, err := newOpsServer("127.0.0.1:0", http.NotFoundHandler())
	require.NoError(t, err)
	defer s.ln.Close()
	require.Equal(t, 20*time.Second, s.srv.WriteTimeout)
	require.Equal(t, 10*time.Second, s.srv.ReadTimeout)
}
