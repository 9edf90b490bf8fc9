// Package secrettest holds the fake credentials that slotlock's tests
// configure (in URLs, query strings, headers, environment variables and the
// Redis password) and a sink for everything the tests capture: log lines,
// command output, errors. A package's TestMain calls Check after the whole
// package ran, so a credential that reaches any captured output in any test
// fails the suite, even in a test that was not looking for it.
package secrettest

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// The fake credentials. Each is unique and long enough not to occur by
// chance; tests put them wherever a user would put a real one.
const (
	URLUser      = "sentinel-urluser-b7e1"   // user name in a URL's user info
	URLPassword  = "sentinel-urlpass-4f1a"   // password in a URL's user info
	Sig          = "sentinel-sig-7c2e9d"     // Azure SAS / Logic Apps sig= value
	Code         = "sentinel-code-91ab3f"    // Azure Functions code= value
	Token        = "sentinel-token-5d0c2a"   // a token= query value
	Bearer       = "sentinel-bearer-e83f10"  // Authorization: Bearer <this>
	APIKey       = "sentinel-apikey-2b6d7e"  // X-Api-Key, api-key, x-functions-key, ...
	SlotlockHdr  = "sentinel-slhdr-0a9c44"   // a user's X-Slotlock-Secret header
	RedisPass    = "sentinel-redispw-66f2b1" // redis.password
	IdentityHdr  = "sentinel-idhdr-3e7a58"   // IDENTITY_HEADER of a managed identity
	IdentityURL  = "sentinel-idurl-c41f0e"   // part of IDENTITY_ENDPOINT
	EnvSecret    = "sentinel-envpw-8d2c6b"   // a job's own env DB_PASSWORD
	EnvPlain     = "sentinel-envplain-a4d7"  // an env value under a name no pattern knows (MYSQL_PWD, GPG_PASSPHRASE)
	ArgSecret    = "sentinel-argpw-5e9b03"   // an exec argument: ["--password", this], ["-u", "user:this"]
	DSNPassword  = "sentinel-dsnpw-17c8fa"   // the password in a Go MySQL DSN user:this@tcp(h)/db
	BodySecret   = "sentinel-bodypw-d26e41"  // in an http body {"password": this}
	OutputSecret = "sentinel-outpw-90b3c5"   // printed by a program (in a URL's user info, or its own env value)
	FleetRedis   = "sentinel-azkey-7b1e2d"   // a Redis password inside a pasted connection string host:6380,password=this
	ResponseEcho = "sentinel-echoed-f19b27"  // not a credential: marks an echoed body
)

// All returns every fake credential (not ResponseEcho).
func All() []string {
	return []string{URLUser, URLPassword, Sig, Code, Token, Bearer, APIKey, SlotlockHdr, RedisPass,
		IdentityHdr, IdentityURL, EnvSecret, EnvPlain, ArgSecret, DSNPassword, BodySecret, OutputSecret, FleetRedis}
}

var (
	mu   sync.Mutex
	sink bytes.Buffer
)

// Capture records output a test captured (log lines, stdout, stderr, an
// error's text) for Check. Safe for concurrent use.
func Capture(p []byte) {
	mu.Lock()
	defer mu.Unlock()
	sink.Write(p)
	sink.WriteByte('\n')
}

// CaptureString is Capture for a string.
func CaptureString(s string) { Capture([]byte(s)) }

// Check scans everything captured so far for the fake credentials and
// returns an error quoting each leak in its context, or nil.
func Check() error {
	mu.Lock()
	defer mu.Unlock()
	out := sink.String()
	var leaks []string
	for _, s := range All() {
		if i := strings.Index(out, s); i >= 0 {
			from, to := max(0, i-200), min(len(out), i+len(s)+80)
			leaks = append(leaks, fmt.Sprintf("%s leaked:\n...%s...", s, out[from:to]))
		}
	}
	if len(leaks) > 0 {
		return fmt.Errorf("secrettest: %d fake credential(s) in the captured output of the tests (%d bytes scanned):\n%s",
			len(leaks), len(out), strings.Join(leaks, "\n"))
	}
	return nil
}

// Scanned returns how many bytes were captured.
func Scanned() int {
	mu.Lock()
	defer mu.Unlock()
	return sink.Len()
}

// AfterTests is what a package's TestMain runs after m.Run (its code):
// the scan of everything captured for the fake credentials (Check), then,
// when all passed, the check that every goroutine the tests started has
// ended (goleak). It prints what failed and returns the exit code.
func AfterTests(code int) int {
	if err := Check(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: secrets scan of the captured test output:", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "secrets scan: %d bytes of captured test output, no fake credential\n", Scanned())
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: goroutines left running after the tests:", err)
			return 1
		}
	}
	return code
}
