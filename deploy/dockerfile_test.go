package deploy

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v4"
)

// instruction is one Dockerfile instruction, continuation lines joined and
// comment lines dropped, as both builders read it.
type instruction struct {
	line int    // 1-based line of its first line
	cmd  string // upper case: FROM, RUN, ...
	args string // the rest, continuations joined with a space
}

// dockerfile is a parsed Dockerfile: its parser directives (lines such as
// `# syntax=...` before the first instruction) and its instructions.
type dockerfile struct {
	directives   map[string]string
	instructions []instruction
}

var directivePattern = regexp.MustCompile(`^#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$`)

func parseDockerfile(t *testing.T, text string) dockerfile {
	t.Helper()
	df := dockerfile{directives: map[string]string{}}
	lines := strings.Split(text, "\n")
	inDirectives := true
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if inDirectives {
			if m := directivePattern.FindStringSubmatch(trimmed); m != nil {
				df.directives[strings.ToLower(m[1])] = m[2]
				continue
			}
			inDirectives = false
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		start := i
		full := trimmed
		for strings.HasSuffix(full, `\`) && i+1 < len(lines) {
			full = strings.TrimSuffix(full, `\`)
			i++
			next := strings.TrimSpace(lines[i])
			if strings.HasPrefix(next, "#") {
				full += `\` // a comment inside a continuation is dropped
				continue
			}
			full += " " + next
		}
		cmd, args, _ := strings.Cut(full, " ")
		df.instructions = append(df.instructions, instruction{line: start + 1, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
	}
	require.NotEmpty(t, df.instructions, "no instruction in the Dockerfile")
	return df
}

// buildKitOnly returns why an instruction needs BuildKit, or "" when the
// classic builder (what Azure Container Registry runs) accepts it too.
func buildKitOnly(in instruction) string {
	for _, v := range []string{"BUILDPLATFORM", "BUILDOS", "BUILDARCH", "BUILDVARIANT", "TARGETPLATFORM", "TARGETOS", "TARGETARCH", "TARGETVARIANT"} {
		if regexp.MustCompile(`\$\{?`+v+`\b`).MatchString(in.args) || (in.cmd == "ARG" && regexp.MustCompile(`^`+v+`\b`).MatchString(in.args)) {
			return v + " is set by BuildKit only"
		}
	}
	flags := map[string][]string{
		"FROM": {"--platform"},
		"RUN":  {"--mount", "--network", "--security"},
		"COPY": {"--link", "--chmod", "--parents", "--exclude"},
		"ADD":  {"--link", "--chmod", "--checksum", "--keep-git-dir", "--parents", "--exclude"},
	}
	for _, f := range flags[in.cmd] {
		if regexp.MustCompile(`(^|\s)` + f + `(=|\s)`).MatchString(in.args) {
			return in.cmd + " " + f + " needs BuildKit"
		}
	}
	if (in.cmd == "RUN" || in.cmd == "COPY") && regexp.MustCompile(`<<-?["']?[A-Za-z]`).MatchString(in.args) {
		return "heredocs need BuildKit"
	}
	return ""
}

// azureDockerOptions reads the docker section of the slotlock service in
// deploy/azure/azure.yaml.
func azureDockerOptions(t *testing.T) (remoteBuild bool, path string) {
	t.Helper()
	var project struct {
		Services map[string]struct {
			Docker struct {
				Path        string `yaml:"path"`
				RemoteBuild bool   `yaml:"remoteBuild"`
			} `yaml:"docker"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, "azure/azure.yaml"), &project))
	svc, ok := project.Services["slotlock"]
	require.True(t, ok, "azure.yaml has no slotlock service")
	return svc.Docker.RemoteBuild, svc.Docker.Path
}

// With remoteBuild on, azd has Azure Container Registry build the image,
// and a registry build runs the classic builder, not BuildKit: the
// Dockerfile must use nothing else (and azd must not need to fall back to a
// local Docker the deploy docs say is not needed).
func TestDockerfileBuildsWithoutBuildKit(t *testing.T) {
	t.Run("checker", testBuildKitOnlySyntaxIsRecognised)
	remote, path := azureDockerOptions(t)
	require.Equal(t, "deploy/Dockerfile", path, "azure.yaml builds another Dockerfile than the one checked here")
	df := parseDockerfile(t, string(readFile(t, "Dockerfile")))
	if !remote {
		t.Skip("azure.yaml builds locally (remoteBuild: false): BuildKit syntax would be allowed")
	}
	require.NotContains(t, df.directives, "syntax", "a # syntax= directive makes BuildKit fetch an unpinned frontend, and the classic builder ignores it")
	for _, in := range df.instructions {
		require.Empty(t, buildKitOnly(in), "deploy/Dockerfile:%d: %s %s", in.line, in.cmd, in.args)
	}
}

// The checker itself recognises what the Dockerfile used before it was
// made builder-neutral (a checker that cannot fail checks nothing).
func testBuildKitOnlySyntaxIsRecognised(t *testing.T) {
	df := parseDockerfile(t, "# syntax=docker/dockerfile:1\n"+
		"FROM --platform=$BUILDPLATFORM golang:1.26 AS build\n"+
		"ARG TARGETARCH\n"+
		"RUN --mount=type=cache,target=/go/pkg/mod \\\n    go mod download\n"+
		"RUN CGO_ENABLED=0 GOARCH=${TARGETARCH} go build ./...\n"+
		"COPY --link --from=build /a /b\n"+
		"COPY --chmod=0755 a b\n"+
		"ADD --checksum=sha256:00 https://example.invalid/x /x\n"+
		"RUN <<EOF\necho hi\nEOF\n")
	require.Equal(t, "docker/dockerfile:1", df.directives["syntax"])
	for _, in := range df.instructions[:8] {
		require.NotEmpty(t, buildKitOnly(in), "line %d (%s %s) not flagged", in.line, in.cmd, in.args)
	}
	for _, ok := range []string{"FROM golang:1.26@sha256:" + strings.Repeat("a", 64) + " AS build", "COPY --from=build /out/x /x", "RUN go build -o /out/x ./cmd/x", "COPY --chown=1:1 a b"} {
		cmd, args, _ := strings.Cut(ok, " ")
		require.Empty(t, buildKitOnly(instruction{cmd: cmd, args: args}), ok)
	}
}

var pinnedImage = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:-]*:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)

// Every image the Dockerfile starts FROM is pinned by digest (with its tag
// for the reader), so a build takes exactly the bytes that were reviewed;
// the same for every image compose pulls.
func TestImagesPinnedByDigest(t *testing.T) {
	df := parseDockerfile(t, string(readFile(t, "Dockerfile")))
	globals := map[string]string{}
	stages := map[string]bool{}
	var froms int
	for _, in := range df.instructions {
		switch in.cmd {
		case "ARG":
			if froms == 0 {
				name, def, _ := strings.Cut(in.args, "=")
				globals[name] = def
			}
		case "FROM":
			froms++
			fields := strings.Fields(in.args)
			for len(fields) > 1 && strings.HasPrefix(fields[0], "--") {
				fields = fields[1:] // --platform=...: TestDockerfileBuildsWithoutBuildKit's concern
			}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				stages[fields[2]] = true
			}
			if stages[fields[0]] && !strings.EqualFold(fields[0], fields[len(fields)-1]) {
				continue // FROM an earlier stage
			}
			ref := regexp.MustCompile(`\$\{?([A-Z_]+)\}?`).ReplaceAllStringFunc(fields[0], func(v string) string {
				return globals[strings.Trim(v, "${}")]
			})
			require.Regexp(t, pinnedImage, ref, "deploy/Dockerfile:%d: FROM %s is not name:tag@sha256:digest", in.line, in.args)
		}
	}
	require.GreaterOrEqual(t, froms, 3)

	var compose struct {
		Services map[string]map[string]any `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, "local/compose.yaml"), &compose))
	require.NotEmpty(t, compose.Services)
	for name, svc := range compose.Services {
		if _, built := svc["build"]; built {
			continue // slotlock itself, built from deploy/Dockerfile
		}
		image, _ := svc["image"].(string)
		require.Regexp(t, pinnedImage, image, "compose service %s pulls an image not pinned by digest", name)
	}
}

// tini comes from Debian at a fixed version, and the .deb must match a
// SHA-256 pinned per architecture; nothing installs an unpinned tini.
func TestTiniPinned(t *testing.T) {
	text := string(readFile(t, "Dockerfile"))
	df := parseDockerfile(t, text)
	args := map[string]string{}
	var fetch string
	for _, in := range df.instructions {
		if in.cmd == "ARG" {
			name, def, _ := strings.Cut(in.args, "=")
			args[name] = def
		}
		if in.cmd == "RUN" && strings.Contains(in.args, "tini") {
			require.NotRegexp(t, `apt-get install[^;&]*\btini\b`, in.args, "tini installed by name, at whatever version the archive has")
			fetch = in.args
		}
	}
	require.Regexp(t, `^\d[0-9A-Za-z.+~-]*$`, args["TINI_VERSION"], "TINI_VERSION is not a fixed Debian version")
	for _, arch := range []string{"AMD64", "ARM64"} {
		require.Regexp(t, `^[0-9a-f]{64}$`, args["TINI_SHA256_"+arch], "no pinned SHA-256 of the tini .deb for %s", arch)
	}
	require.Contains(t, fetch, `apt-get download "tini=${TINI_VERSION}"`)
	require.Contains(t, fetch, "sha256sum -c")
	require.Contains(t, text, "COPY --from=init /tini/usr/bin/tini-static /usr/local/bin/tini")
}
