package local

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v4"
)

// composeService holds the settings of a compose service that its
// hardening depends on.
type composeService struct {
	Build       any      `yaml:"build"`
	Image       string   `yaml:"image"`
	User        string   `yaml:"user"`
	ReadOnly    bool     `yaml:"read_only"`
	CapDrop     []string `yaml:"cap_drop"`
	CapAdd      []string `yaml:"cap_add"`
	SecurityOpt []string `yaml:"security_opt"`
	Privileged  bool     `yaml:"privileged"`
	Init        bool     `yaml:"init"`
	Ports       []string `yaml:"ports"`
}

func composeServices(t *testing.T) map[string]composeService {
	t.Helper()
	b, err := os.ReadFile("compose.yaml")
	require.NoError(t, err)
	var file struct {
		Services map[string]composeService `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(b, &file))
	require.Len(t, file.Services, 6, "three Redis nodes and three replicas")
	return file.Services
}

// Every container of the local cluster runs as a production one should: a
// read-only root filesystem, no Linux capability, no privilege escalation,
// not as root; the replicas' ops ports are published on loopback only, and
// nothing else is published.
func TestComposeIsHardened(t *testing.T) {
	loopback := regexp.MustCompile(`^127\.0\.0\.1:\d+:\d+$`)
	replicas := 0
	for name, svc := range composeServices(t) {
		t.Run(name, func(t *testing.T) {
			require.True(t, svc.ReadOnly, "read_only: true")
			require.Equal(t, []string{"ALL"}, svc.CapDrop, "cap_drop: [ALL]")
			require.Empty(t, svc.CapAdd)
			require.False(t, svc.Privileged)
			require.Contains(t, svc.SecurityOpt, "no-new-privileges:true")
			require.False(t, svc.Init, "the image's tini is PID 1; a second init makes it warn and not reap")
			if svc.Build != nil {
				replicas++
				require.Empty(t, svc.User, "the image's numeric USER (65532) applies")
				require.Len(t, svc.Ports, 1)
			} else {
				require.Regexp(t, `^[1-9]\d*:[1-9]\d*$`, svc.User, "Redis runs as its image's non-root user")
				require.Empty(t, svc.Ports, "Redis is reached on the compose network only")
			}
			for _, p := range svc.Ports {
				require.Regexp(t, loopback, p, "published on every interface of the host")
			}
		})
	}
	require.Equal(t, 3, replicas)
}

// The documented compose commands use the loopback addresses the file
// publishes.
func TestComposeDocsUseLoopback(t *testing.T) {
	b, err := os.ReadFile("../../docs/deploy.md")
	require.NoError(t, err)
	doc := string(b)
	i := strings.Index(doc, "docker compose -f deploy/local/compose.yaml up")
	require.GreaterOrEqual(t, i, 0)
	require.True(t, strings.Contains(doc[i:], "curl -s 127.0.0.1:8081/metrics"), "docs/deploy.md: the compose example does not curl 127.0.0.1:8081")
}
