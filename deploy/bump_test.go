package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeCurl plays a registry with the token challenge of Docker Hub and
// gcr.io: a manifest HEAD without a token gets 401 and a Bearer
// challenge naming the realm on the same host; the realm hands out a
// token; with it, the HEAD answers the digest sha256(host/repo:tag).
// FAKE_REGISTRY_STATUS forces another status for every manifest request.
// Each call is appended to $FAKE_LOG.
const fakeCurl = `#!/usr/bin/env bash
echo "curl $*" >>"$FAKE_LOG"
url="" auth=""
while [ $# -gt 0 ]; do
  case "$1" in
  -H) shift; case "$1" in Authorization:*) auth="$1" ;; esac ;;
  http*) url="$1" ;;
  esac
  shift
done
case "$url" in
*/token\?*)
  case "$url" in *service=*\&scope=repository:*:pull*) ;; *) echo "bad token request $url" >&2; exit 22 ;; esac
  echo '{"token":"tok","access_token":"tok","expires_in":300}'
  exit 0 ;;
esac
host=${url#https://}; host=${host%%/*}
path=${url#https://$host/v2/}
repo=${path%/manifests/*}; tag=${path##*/manifests/}
if [ -n "$FAKE_REGISTRY_STATUS" ]; then printf 'HTTP/2 %s\r\n\r\n' "$FAKE_REGISTRY_STATUS"; exit 0; fi
if [ "$auth" != "Authorization: Bearer tok" ]; then
  printf 'HTTP/2 401\r\nwww-authenticate: Bearer realm="https://%s/token",service="%s",scope="repository:%s:pull"\r\ncontent-length: 0\r\n\r\n' "$host" "$host" "$repo"
  exit 0
fi
sum=$(printf '%s' "$host/$repo:$tag" | sha256sum | cut -d' ' -f1)
printf 'HTTP/2 200\r\ncontent-type: application/vnd.oci.image.index.v1+json\r\nDocker-Content-Digest: sha256:%s\r\n\r\n' "$sum"
`

// fakeDocker answers `docker run IMAGE sh -c ...` with apt-cache's view of
// a newer tini, and logs the image it was asked to run.
const fakeDocker = `#!/usr/bin/env bash
echo "docker $*" >>"$FAKE_LOG"
cat <<'EOF'
Package: tini
Version: 0.19.0-2
Architecture: amd64
Filename: pool/main/t/tini/tini_0.19.0-2_amd64.deb
SHA256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa

Package: tini
Version: 0.19.0-2
Architecture: arm64
Filename: pool/main/t/tini/tini_0.19.0-2_arm64.deb
SHA256: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
EOF
`

type bumpTree struct {
	root, log string
	env       []string
}

// newBumpTree copies the script and the files it edits into a temporary
// repository layout, with curl and docker replaced by the fakes.
func newBumpTree(t *testing.T) *bumpTree {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	root := t.TempDir()
	for _, f := range []string{"bump-digests.sh", "Dockerfile", "local/compose.yaml"} {
		dst := filepath.Join(root, "deploy", f)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, readFile(t, f), 0o755))
	}
	bin := filepath.Join(root, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "curl"), []byte(fakeCurl), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "docker"), []byte(fakeDocker), 0o755))
	log := filepath.Join(root, "calls.log")
	return &bumpTree{root: root, log: log, env: append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKE_LOG="+log, "FAKE_REGISTRY_STATUS=")}
}

func (b *bumpTree) run(t *testing.T, extraEnv []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(b.root, "deploy", "bump-digests.sh")}, args...)...)
	cmd.Env = append(append([]string{}, b.env...), extraEnv...)
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err, string(out))
	return string(out), 0
}

func (b *bumpTree) read(t *testing.T, f string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.root, "deploy", f))
	require.NoError(t, err)
	return string(data)
}

func fakeDigest(ref string) string {
	s := sha256.Sum256([]byte(ref))
	return hex.EncodeToString(s[:])
}

// The bump script, offline: it finds every pinned image, asks the right
// registry host and repository (Docker Hub's library/ prefix, gcr.io),
// follows the token challenge, rewrites only the digests (tags and the
// rest of the files unchanged), moves tini's version and checksums to
// what apt in the pinned init image reports, and --check tells stale
// from current.
func TestBumpDigestsRewritesPins(t *testing.T) {
	b := newBumpTree(t)
	before := map[string]string{"Dockerfile": b.read(t, "Dockerfile"), "local/compose.yaml": b.read(t, "local/compose.yaml")}

	out, code := b.run(t, nil, "--check")
	require.Equal(t, 1, code, "--check with stale pins: %s", out)
	require.Equal(t, before["Dockerfile"], b.read(t, "Dockerfile"), "--check wrote a file")

	out, code = b.run(t, nil)
	require.Equal(t, 0, code, out)
	df, compose := b.read(t, "Dockerfile"), b.read(t, "local/compose.yaml")
	want := map[string]string{
		"golang:1.26":    "registry-1.docker.io/library/golang:1.26",
		"debian:12-slim": "registry-1.docker.io/library/debian:12-slim",
		"gcr.io/distroless/static-debian12:nonroot": "gcr.io/distroless/static-debian12:nonroot",
	}
	for nameTag, asked := range want {
		require.Contains(t, df, nameTag+"@sha256:"+fakeDigest(asked)+"\n", nameTag)
	}
	require.Contains(t, compose, "redis:7@sha256:"+fakeDigest("registry-1.docker.io/library/redis:7")+"\n")
	require.Contains(t, df, "ARG TINI_VERSION=0.19.0-2\n")
	require.Contains(t, df, "ARG TINI_SHA256_AMD64="+strings.Repeat("a", 64)+"\n")
	require.Contains(t, df, "ARG TINI_SHA256_ARM64="+strings.Repeat("b", 64)+"\n")

	// Nothing but the pins changed: masking digests and tini's values
	// gives the files as they were.
	mask := regexp.MustCompile(`@sha256:[0-9a-f]{64}|(TINI_VERSION|TINI_SHA256_AMD64|TINI_SHA256_ARM64)=\S+`)
	for f, old := range before {
		require.Equal(t, mask.ReplaceAllString(old, "X"), mask.ReplaceAllString(b.read(t, f), "X"), f)
	}

	// tini was looked up in the newly pinned init image.
	calls, err := os.ReadFile(b.log)
	require.NoError(t, err)
	require.Contains(t, string(calls), "docker run --rm debian:12-slim@sha256:"+fakeDigest("registry-1.docker.io/library/debian:12-slim")+" sh -c")
	require.Contains(t, string(calls), "https://gcr.io/token?service=gcr.io&scope=repository:distroless/static-debian12:pull")

	out, code = b.run(t, nil, "--check")
	require.Equal(t, 0, code, "--check right after a bump: %s", out)
	require.Contains(t, out, "every pin is current")
}

// A registry that refuses a lookup stops the script with exit 2 and a
// message naming the image, and no file is written.
func TestBumpDigestsWritesNothingOnFailure(t *testing.T) {
	b := newBumpTree(t)
	before := b.read(t, "Dockerfile")
	out, code := b.run(t, []string{"FAKE_REGISTRY_STATUS=404"})
	require.Equal(t, 2, code, out)
	require.Regexp(t, `bump-digests: [a-z0-9./-]+:[a-z0-9.-]+: \S+ answered HTTP 404`, out)
	require.Equal(t, before, b.read(t, "Dockerfile"))
}
