package cli_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/internal/secrettest"
	"github.com/slotlock/slotlock/locking/redistest"
)

// requireNoSecret fails when any fake credential appears in texts.
func requireNoSecret(t *testing.T, texts ...string) {
	t.Helper()
	all := strings.Join(texts, "\n")
	for _, s := range secrettest.All() {
		require.NotContains(t, all, s, "a credential leaked")
	}
}

// secretJobsYAML configures, against base (an http server), an http job
// that succeeds, one that fails with retries and gets its request echoed
// back, and an exec job that prints its whole environment; every
// credential a user would write is there.
func secretJobsYAML(base string) string {
	u := func(path string) string {
		h := strings.Replace(base, "://", "://"+secrettest.URLUser+":"+secrettest.URLPassword+"@", 1)
		return h + path + "?sig=" + secrettest.Sig + "&code=" + secrettest.Code + "&token=" + secrettest.Token + "&page=2"
	}
	headers := fmt.Sprintf(`
      headers:
        Authorization: "Bearer %s"
        x-functions-key: %s
        Ocp-Apim-Subscription-Key: %s
        X-Slotlock-Secret: %s
        Content-Type: application/json`, secrettest.Bearer, secrettest.APIKey, secrettest.APIKey, secrettest.SlotlockHdr)
	return fmt.Sprintf(`
jobs:
  - name: hook-ok
    schedule: "* * * * * *"
    plugin: http
    params:
      url: %q
      allow_insecure: true
      show_query: [page]%s
  - name: hook-fail
    schedule: "*/2 * * * * *"
    plugin: http
    retry: {max: 1, backoff: 100ms}
    params:
      url: %q
      allow_insecure: true%s
  - name: envdump
    schedule: "* * * * * *"
    plugin: exec
    params:
      command: ["/usr/bin/env"]
      env: {DB_PASSWORD: %q, MYSQL_PWD: %q}
`, u("/ok"), headers, u("/fail"), headers, secrettest.EnvSecret, secrettest.EnvPlain)
}

// echoServer answers /ok with 204 and anything else with a 500 whose body
// echoes the request URL and a credential header.
func echoServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/ok" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "cannot handle %s for key %s", r.URL.String(), r.Header.Get("X-Functions-Key"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// No credential in any line: `validate -v`, and a replica's whole log
// (start-up dump, http success, http failure with retries, exec output) on
// three TLS Redis nodes with a password, in a replica whose environment
// holds a managed identity.
func TestNoCredentialInAnyLogLine(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3, redistest.TLS(), redistest.Password(secrettest.RedisPass))
	srv := echoServer(t)
	cfg := writeConfig(t, redisNodesYAML(nodes.Addrs())+"  tls: true\n"+`
log: {format: json, level: debug}
http: {addr: ""}
`+secretJobsYAML(srv.URL))
	env := []string{
		"SLOTLOCK_REDIS__PASSWORD=" + secrettest.RedisPass,
		"SSL_CERT_FILE=" + nodes.CAFile(),
		"IDENTITY_ENDPOINT=http://localhost:42356/msi/token?" + secrettest.IdentityURL,
		"IDENTITY_HEADER=" + secrettest.IdentityHdr,
		"MSI_SECRET=" + secrettest.IdentityHdr,
	}

	out, errOut, code := slotlock(t, env, "validate", "-v", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	requireNoSecret(t, out, errOut)
	require.Contains(t, out, `"url": "http://***@127.0.0.1:`)
	require.Contains(t, out, `/ok?sig=***\u0026code=***\u0026token=***\u0026page=2"`)
	require.Contains(t, out, `"x-functions-key": "***"`)

	p := startReplica(t, cfg, append(env, "SLOTLOCK_REPLICA=r1")...)
	waitFor(t, 30*time.Second, "a success, a retried failure and the exec output", func() bool {
		return len(p.events("run.succeeded")) > 0 && len(p.events("run.retrying")) > 0 &&
			len(p.events("run.failed")) > 1 && len(p.events("exec.output")) > 0
	})
	code, _ = p.stop(t, 30*time.Second)
	require.Equal(t, 0, code)
	log := p.rawLog()
	requireNoSecret(t, log)
	for _, want := range []string{"sig=***", `"X-Functions-Key":"***"`, "cannot handle /fail?sig=***", "DB_PASSWORD=***", "MYSQL_PWD=***"} {
		require.Contains(t, log, want)
	}
	for _, ev := range p.events("exec.output") {
		for _, name := range []string{"IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_SECRET", "SLOTLOCK_REDIS__PASSWORD", "SSL_CERT_FILE"} {
			require.NotContains(t, ev["stdout"], name, "the exec job saw the replica's %s", name)
		}
	}
}

// /readyz says up or down and how many nodes answered, nothing more: no
// node address, no Redis error (refused AUTH, connection refused). The
// details are in the log. The replica runs with a password without TLS
// because redis.allow_insecure says so, and warns about it at start.
func TestReadyzBodyHasCountsOnly(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3, redistest.Password("insecure-test-pw"))
	conf := func(addr string) string {
		return writeConfig(t, redisNodesYAML(nodes.Addrs())+fmt.Sprintf(`  allow_insecure: true
log: {format: json}
http: {addr: %q}
jobs:
  - name: tick
    schedule: "* * * * * *"
    plugin: log
    params: {message: tick}
`, addr))
	}
	addr := freeAddr(t)
	p := startReplica(t, conf(addr), "SLOTLOCK_REPLICA=r1", "SLOTLOCK_REDIS__PASSWORD=insecure-test-pw")
	url := "http://" + addr + "/readyz"
	waitFor(t, 10*time.Second, "/readyz 200", func() bool { c, _ := httpGet(url); return c == 200 })
	_, body := httpGet(url)
	require.Equal(t, "ready (3 of 3 lock nodes up, 0 down)\n", body)
	waitFor(t, 5*time.Second, "the allow_insecure warning", func() bool {
		return strings.Contains(p.rawLog(), `"msg":"redis.allow_insecure: the Redis password and every lock cross the network without TLS`)
	})

	require.NoError(t, nodes.Node(1).Kill())
	require.NoError(t, nodes.Node(2).Kill())
	waitFor(t, 10*time.Second, "/readyz 503", func() bool { c, _ := httpGet(url); return c == 503 })
	_, body = httpGet(url)
	require.Equal(t, "not ready: lock quorum unreachable (1 of 3 lock nodes up, 2 down)\n", body)
	waitFor(t, 5*time.Second, "the reason in the log", func() bool {
		return strings.Contains(p.rawLog(), nodes.Node(1).Addr())
	})
	p.stop(t, 30*time.Second)

	// A wrong password: Redis refuses AUTH on every node.
	require.NoError(t, nodes.Node(1).Restart())
	require.NoError(t, nodes.Node(2).Restart())
	addr = freeAddr(t)
	p = startReplica(t, conf(addr), "SLOTLOCK_REPLICA=r2", "SLOTLOCK_REDIS__PASSWORD=wrong-pw")
	url = "http://" + addr + "/readyz"
	waitFor(t, 10*time.Second, "/readyz 503 with a refused AUTH", func() bool {
		c, b := httpGet(url)
		return c == 503 && strings.Contains(b, "0 of 3")
	})
	_, body = httpGet(url)
	require.Equal(t, "not ready: lock quorum unreachable (0 of 3 lock nodes up, 3 down)\n", body)
	waitFor(t, 5*time.Second, "the refused AUTH in the log", func() bool {
		l := p.rawLog()
		return strings.Contains(l, "WRONGPASS") || strings.Contains(l, "invalid password") || strings.Contains(l, "NOAUTH")
	})
	p.stop(t, 30*time.Second)
}

// A password without TLS is a configuration error: validate and run exit
// 2 and name the key and its position; nothing is started.
func TestPasswordWithoutTLSIsAConfigError(t *testing.T) {
	cfg := writeConfig(t, `redis:
  nodes: [{addr: "cache-a.example:6379"}]
  password: x
jobs:
  - name: a
    schedule: "@every 1s"
    plugin: log
    params: {message: x}
`)
	for _, cmd := range []string{"validate", "run"} {
		_, errOut, code := slotlock(t, nil, cmd, "--config", cfg)
		require.Equal(t, 2, code, "%s: %s", cmd, errOut)
		require.Contains(t, errOut, "redis.tls: must be true when a password is set (redis.password)")
		require.Contains(t, errOut, "config.yaml:1:1)")
	}
	_, errOut, code := slotlock(t, []string{"SLOTLOCK_REDIS__ALLOW_INSECURE=true"}, "validate", "--config", cfg)
	require.Equal(t, 0, code, errOut)
}
