package azure

import (
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v4"
)

// bicepParams returns the parameter names a Bicep file declares, and
// which of them have a default.
func bicepParams(t *testing.T, file string) (names []string, defaults map[string]bool) {
	t.Helper()
	defaults = map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^param (\w+) \w+( = .*)?$`).FindAllStringSubmatch(read(t, file), -1) {
		names = append(names, m[1])
		defaults[m[1]] = m[2] != ""
	}
	sort.Strings(names)
	return names, defaults
}

// There is no placeholder image: provision creates no container app; the
// app is created by `azd deploy` from slotlock.bicep, whose image is the
// one azd has just built, with no default. So no other image ever runs
// with the identity that reaches Redis, or with the Redis settings.
func TestNoPlaceholderImage(t *testing.T) {
	var apps []bicepDecl
	for _, d := range allBicep(t) {
		if d.kind == "resource" && strings.HasPrefix(d.typ(), "Microsoft.App/containerApps") {
			apps = append(apps, d)
		}
	}
	require.Len(t, apps, 1, "one container app, declared once")
	require.Equal(t, "slotlock.bicep", apps[0].file)
	require.Regexp(t, `(?m)^\s*image: imageName$`, apps[0].body)
	names, defaults := bicepParams(t, "slotlock.bicep")
	require.Contains(t, names, "imageName")
	require.False(t, defaults["imageName"], "imageName must have no default image")
	require.Equal(t, "${SERVICE_SLOTLOCK_IMAGE_NAME}", readParams(t, "slotlock.parameters.json")["imageName"])

	files, err := filepath.Glob("*.bicep")
	require.NoError(t, err)
	for _, f := range files {
		require.NotRegexp(t, `mcr\.microsoft\.com|quickstart|placeholder`, strings.ToLower(stripComments(read(t, f))), f)
	}

	// azd deploys slotlock.bicep (service name + .bicep and .parameters.json
	// beside the infra module) only if provision is not run again after it:
	// the default `azd up` (provision, deploy), no custom workflow, and an
	// azd that knows all of it.
	var project struct {
		RequiredVersions struct {
			Azd string `yaml:"azd"`
		} `yaml:"requiredVersions"`
		Infra struct {
			Path string `yaml:"path"`
		} `yaml:"infra"`
		Services  map[string]map[string]any `yaml:"services"`
		Workflows map[string]any            `yaml:"workflows"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(read(t, "azure.yaml")), &project))
	require.Equal(t, ">= 1.24.3", project.RequiredVersions.Azd)
	require.Equal(t, ".", project.Infra.Path)
	require.Contains(t, project.Services, "slotlock")
	require.NotContains(t, project.Services["slotlock"], "module", "the module is found by the service name")
	require.Empty(t, project.Workflows, "a provision after deploy is no longer needed")
	require.FileExists(t, "slotlock.parameters.json")
}

// stripComments drops // comments (outside strings) from Bicep source.
func stripComments(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		inString := false
		for i := 0; i < len(line); i++ {
			if line[i] == '\'' {
				inString = !inString
			}
			if !inString && strings.HasPrefix(line[i:], "//") {
				line = line[:i]
				break
			}
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// The app has no ingress: the ops port (/healthz, /readyz, /metrics) is
// reachable by the platform's probes, not from the internet.
func TestAppHasNoIngress(t *testing.T) {
	require.NotRegexp(t, regexp.MustCompile(`(?m)^\s*ingress:`), stripComments(read(t, "slotlock.bicep")))
}

// Every parameter of each deployment is fed by its parameters file, and
// every environment value the app's parameters read is either set by azd,
// chosen by the user (documented), or an output of the provision.
func TestDeploymentParametersAreWired(t *testing.T) {
	for bicep, params := range map[string]string{"main.bicep": "main.parameters.json", "slotlock.bicep": "slotlock.parameters.json"} {
		names, defaults := bicepParams(t, bicep)
		values := readParams(t, params)
		for name := range values {
			require.Contains(t, names, name, "%s sets %s, which %s does not declare", params, name, bicep)
		}
		for _, name := range names {
			if _, ok := values[name]; !ok {
				require.True(t, defaults[name], "%s: %s has no default and %s does not set it", bicep, name, params)
			}
		}
	}
	outputs := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^output (\w+) `).FindAllStringSubmatch(read(t, "main.bicep"), -1) {
		outputs[m[1]] = true
	}
	setByAzd := []string{"AZURE_ENV_NAME", "SERVICE_SLOTLOCK_IMAGE_NAME"}
	chosen := []string{"SLOTLOCK_REDIS_USERNAME", "SLOTLOCK_REPLICAS", "SLOTLOCK_CPU", "SLOTLOCK_MEMORY", "SLOTLOCK_TERMINATION_GRACE"}
	for name, v := range readParams(t, "slotlock.parameters.json") {
		m := regexp.MustCompile(`^\$\{([A-Z0-9_]+)(=[^}]*)?\}$`).FindStringSubmatch(v)
		require.NotNil(t, m, "slotlock.parameters.json: %s = %q is not one ${VAR}", name, v)
		env := m[1]
		require.True(t, outputs[env] || slices.Contains(setByAzd, env) || slices.Contains(chosen, env),
			"slotlock.parameters.json: %s reads %s, which neither azd nor main.bicep's outputs set", name, env)
	}
}

// Entra ID is the default and needs no password anywhere; the password
// mode (your own nodes) reads its secret from Key Vault through a
// Container Apps Key Vault reference with the app's identity, so no
// password is a template parameter or sits in azd's environment file.
func TestRedisPasswordOnlyThroughKeyVault(t *testing.T) {
	require.Regexp(t, `(?m)^param redisAuth string = 'entra'$`, read(t, "main.bicep"))
	require.Equal(t, "${SLOTLOCK_REDIS_AUTH=entra}", readParams(t, "main.parameters.json")["redisAuth"])
	files, err := filepath.Glob("*.bicep")
	require.NoError(t, err)
	for _, f := range files {
		src := read(t, f)
		require.NotRegexp(t, `(?i)@secure\(\)\s*(@description\([^\n]*\)\s*)?param \w*password`, src, "%s takes a password as a parameter", f)
	}
	for _, p := range []string{"main.parameters.json", "slotlock.parameters.json"} {
		for name, v := range readParams(t, p) {
			if strings.Contains(strings.ToUpper(v), "PASSWORD") {
				require.Equal(t, "${SLOTLOCK_REDIS_PASSWORD_SECRET_URI=}", v, "%s: %s", p, name)
			}
		}
	}

	app := read(t, "slotlock.bicep")
	secret := regexp.MustCompile(`\{\s*name: 'redis-password'([^}]*)\}`).FindStringSubmatch(app)
	require.NotNil(t, secret, "no redis-password secret")
	require.Contains(t, secret[1], "keyVaultUrl: redisPasswordSecretUri")
	require.Contains(t, secret[1], "identity: identityId")
	require.NotContains(t, secret[1], "value:")
	require.Regexp(t, `name: 'SLOTLOCK_REDIS__PASSWORD'\s*secretRef: 'redis-password'`, app)

	// The vault: role-based, the app identity may read secrets, and it is
	// created only in password mode.
	kv := parseBicep(t, "keyvault.bicep")
	require.Contains(t, onlyDecl(t, kv, "resource", "vault").body, "enableRbacAuthorization: true")
	reads := onlyDecl(t, kv, "resource", "appReads")
	require.Contains(t, reads.body, "roleDefinitionId: secretsUser")
	require.Contains(t, reads.body, "principalId: appPrincipalId")
	require.Contains(t, read(t, "keyvault.bicep"), "'4633458b-17de-408a-b874-0445c86b69e6'") // Key Vault Secrets User
	res := parseBicep(t, "resources.bicep")
	require.Equal(t, "if (passwordMode)", onlyDecl(t, res, "module", "vault").header)
	require.Contains(t, read(t, "resources.bicep"), "var passwordMode = !deployRedis && redisAuth == 'password'")

	// The deployed instances accept Entra ID tokens only.
	require.Contains(t, onlyDecl(t, parseBicep(t, "redis.bicep"), "resource", "database").body, "accessKeysAuthentication: 'Disabled'")
}
