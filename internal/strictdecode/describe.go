package strictdecode

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// hidden stands for a value an error message must not show.
const hidden = "(value hidden: the key looks like a credential)"

// secretPath reports whether the last key of a path ("a.b",
// "headers.Authorization", "tokens[1]") is Secret, so errors about its
// value must not show the value.
func (dc Decoder) secretPath(path string) bool {
	if dc.SecretPath != nil && dc.SecretPath(path) {
		return true
	}
	if dc.Secret == nil {
		return false
	}
	for strings.HasSuffix(path, "]") {
		i := strings.LastIndexByte(path, '[')
		if i < 0 {
			break
		}
		path = path[:i]
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	return path != "" && dc.Secret(path)
}

func (dc Decoder) mask(s string) string {
	if dc.Mask == nil {
		return s
	}
	return dc.Mask(s)
}

// quoteAt quotes s for an error about the value at path, unless the value
// may be a credential; Mask applies.
func (dc Decoder) quoteAt(path, s string) string {
	if dc.secretPath(path) {
		return hidden
	}
	return strconv.Quote(dc.mask(s))
}

// describeAt is Describe for the value at path; under a Secret key it
// names only the type, never the value.
func (dc Decoder) describeAt(path string, in any) string {
	if !dc.secretPath(path) {
		return dc.Describe(in)
	}
	switch in.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "an integer"
	case float32, float64:
		return "a number"
	case time.Time:
		return "a timestamp"
	}
	return dc.Describe(in) // lists, maps, null: no value shown
}

// Describe names the YAML type of a value, and the value when it is a
// scalar, for error messages: `string "ls -l"`, "integer 30", "a list",
// "a map", "null". Strings are masked (Mask) and cut at 40 bytes.
func (dc Decoder) Describe(in any) string {
	switch x := in.(type) {
	case nil:
		return "null"
	case string:
		// Masked before it is cut, so a cut URL is still masked whole.
		x = dc.mask(x)
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("string %q", x)
	case bool:
		return fmt.Sprintf("boolean %v", x)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprintf("integer %v", x)
	case float32, float64:
		return fmt.Sprintf("number %v", x)
	case time.Time:
		return fmt.Sprintf("timestamp %s", x.Format(time.RFC3339))
	}
	switch reflect.ValueOf(in).Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a map"
	}
	return fmt.Sprintf("%T", in)
}
