package redistest_test

import (
	"fmt"
	"strings"
)

func contains(s, sub string) bool               { return strings.Contains(s, sub) }
func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
