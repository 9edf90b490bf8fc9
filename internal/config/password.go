package config

import (
	"errors"
	"fmt"
	"os"
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
	if err := checkPasswordFileMode(r.PasswordFile); err != nil {
		l.add("redis.password_file", err)
		return
	}
	b, err := os.ReadFile(r.PasswordFile)
	if err != nil {
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
