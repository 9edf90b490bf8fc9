package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A configuration file (or directory) every user may write is refused, at
// load and at reload (LoadData); a sticky world-writable directory is not,
// nor group write (user private groups). A password_file every user may
// read is refused.
func TestConfigAndPasswordFileModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte("log: {level: info}\n"), 0o600))
	_, err := Load(path, nil)
	require.NoError(t, err)

	require.NoError(t, os.Chmod(path, 0o664))
	_, err = Load(path, nil)
	require.NoError(t, err, "group write: a checkout under umask 002")
	for _, mode := range []os.FileMode{0o666, 0o646} {
		require.NoError(t, os.Chmod(path, mode))
		_, err = Load(path, nil)
		require.ErrorContains(t, err, "is writable by every user")
		require.ErrorContains(t, err, "chmod o-w "+path)
		_, err = LoadData(path, []byte("log: {level: info}\n"), nil)
		require.ErrorContains(t, err, "is writable by", "a reload refuses it too")
	}
	require.NoError(t, os.Chmod(path, 0o644))
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err = Load(path, nil)
	require.ErrorContains(t, err, "the directory "+dir)
	require.NoError(t, os.Chmod(dir, 0o775))
	_, err = Load(path, nil)
	require.NoError(t, err, "a group-writable directory")
	require.NoError(t, os.Chmod(dir, 0o777|os.ModeSticky))
	_, err = Load(path, nil)
	require.NoError(t, err, "a sticky directory: nobody else can replace the file")
	require.NoError(t, os.Chmod(dir, 0o700))

	pw := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(pw, []byte("s3cret-pw\n"), 0o644))
	yaml := "redis: {nodes: [{addr: 'a:6380'}], tls: true, password_file: " + pw + "}\n"
	lines := loadErrs(t, yaml)
	require.True(t, containsLine(lines, "redis.password_file: readable by every user (mode 0644): chmod o-r "+pw), "%v", lines)
	require.NotContains(t, strings.Join(lines, "\n"), "s3cret-pw")
	require.NoError(t, os.Chmod(pw, 0o640))
	require.Equal(t, "s3cret-pw", mustLoad(t, yaml).Redis.Password)
}

// The status page has no authentication: on an address other than
// loopback it needs http.ui_public.
func TestUIRefusedOffLoopback(t *testing.T) {
	for _, addr := range []string{":8080", "0.0.0.0:8080", "10.0.0.5:8080", "[::]:8080"} {
		lines := loadErrs(t, "http: {addr: '"+addr+"', ui: true}\n")
		require.True(t, containsLine(lines, "http.ui: the status page would be served to every network"), "%s: %v", addr, lines)
		require.True(t, containsLine(lines, "http.ui_public: true"), "%v", lines)
		require.True(t, mustLoad(t, "http: {addr: '"+addr+"', ui: true, ui_public: true}\n").HTTP.UIPublic)
	}
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080"} {
		require.True(t, mustLoad(t, "http: {addr: '"+addr+"', ui: true}\n").HTTP.UI, addr)
	}
	mustLoad(t, "http: {addr: ':8080'}\n") // no page: the probes' port stays open to all
}
