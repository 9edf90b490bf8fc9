package config

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The configuration file is code: its exec jobs run programs, and a hot
// reload applies a change within seconds. A file, or a directory, that
// every user may write is refused (exit 2, config.rejected on reload), as
// is a password_file that every user may read. Group write is accepted:
// with user private groups (umask 002, Debian's default for users) every
// checkout is group-writable by a group of one, and a shared group is a
// deliberate grant. A world-writable directory with the sticky bit (/tmp)
// is accepted: there nobody else can replace or remove the file. A missing
// file is not checked here (reading it fails).

// checkConfigMode refuses a configuration file, or its directory, that
// every user may write.
func checkConfigMode(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if m := fi.Mode().Perm(); m&0o002 != 0 {
		return fmt.Errorf("%s is writable by %s (mode %04o): anyone who can write it can run programs as slotlock "+
			"through an exec job; chmod o-w %s", path, who(m), m, path)
	}
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	if err != nil {
		return nil
	}
	if m := di.Mode(); m.Perm()&0o002 != 0 && m&fs.ModeSticky == 0 {
		return fmt.Errorf("the directory %s of %s is writable by %s (mode %04o): anyone who can write it can replace the "+
			"configuration; chmod o-w %s", dir, path, who(m.Perm()), m.Perm(), dir)
	}
	return nil
}

// passwordFileMode returns the check that refuses a password file that
// every user may read; readRegular applies it before reading a byte.
func passwordFileMode(path string) func(fs.FileMode) error {
	return func(mode fs.FileMode) error {
		return checkPasswordMode(path, mode)
	}
}

func checkPasswordMode(path string, mode fs.FileMode) error {
	if m := mode.Perm(); m&0o004 != 0 {
		return fmt.Errorf("readable by every user (mode %04o): chmod o-r %s (e.g. 0600, or 0640 with slotlock's group; "+
			"a Kubernetes secret volume: defaultMode 0440)", m, path)
	}
	return nil
}

func who(fs.FileMode) string { return "every user" }
