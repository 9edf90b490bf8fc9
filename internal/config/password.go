package config

import (
	"errors"
	"fmt"
	"strings"
)

// readPasswordFile reads redis.password_file into redis.password.
func (l *loader) readPasswordFile(r *Redis) {
	if r.PasswordFile == "" {
		return
	}
	if r.Password != "" {
		l.add("redis.password_file", errors.New("set either redis.password or redis.password_file, not both"))
		return
	}
	// Regular file, mode and size are judged before a byte is read; see
	// readRegular.
	b, err := readRegular(r.PasswordFile, MaxPasswordSize, passwordFileMode(r.PasswordFile))
	var refused *refusedError
	switch {
	case errors.As(err, &refused):
		l.add("redis.password_file", refused.err)
		return
	case err != nil:
		l.add("redis.password_file", fmt.Errorf("cannot read the password: %w", err))
		return
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" {
		l.addValue("redis.password_file", r.PasswordFile, errors.New("the file is empty"))
		return
	}
	r.Password = pw
}
