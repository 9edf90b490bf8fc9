package strictdecode

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Decoder decodes strictly. Its zero value shows every value in errors;
// set Secret and Mask to keep credentials out of them.
type Decoder struct {
	// Secret reports whether the value under key (the last key of a path:
	// "password", "Authorization") may be a credential: errors about it
	// name the value's type, never the value. nil means no key is secret.
	Secret func(key string) bool
	// SecretPath reports whether the value at a full path ("env.DB_PASS",
	// "command[2]") may be a credential by its place, whatever its key:
	// errors about it name the value's type, never the value. nil: none.
	SecretPath func(path string) bool
	// Mask makes a string value fit for an error message (masking the
	// credentials in URLs, say). nil shows values as they are.
	Mask func(value string) string
}

// Decode decodes in into the struct, map or other value that into points
// to:
//
//   - a key with no matching field is an error (errors.Is ErrUnknownKey)
//     that names the key and suggests a near spelling;
//   - types must match: a list is not a string, a string is not a list;
//     strings are converted to booleans and numbers only when they parse
//     completely (so environment overrides work), never the other way;
//   - time.Duration fields take Go duration strings ("500ms", "30s", "1h");
//     a bare number is an error rather than a count of nanoseconds;
//   - types implementing encoding.TextUnmarshaler take strings.
//
// The error is an errors.Join of *FieldError values, one per problem,
// sorted by path; nil when in decoded cleanly.
func (dc Decoder) Decode(in map[string]any, into any) error {
	rv := reflect.ValueOf(into)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strictdecode: target must be a non-nil pointer, got %T", into)
	}
	if in == nil {
		return nil
	}
	d := decoder{Decoder: dc}
	d.decode("", in, rv.Elem())
	return errors.Join(d.errs...)
}

type decoder struct {
	Decoder
	errs []error
}

func (d *decoder) fail(path string, err error) {
	d.errs = append(d.errs, &FieldError{Path: path, Err: err})
}

func (d *decoder) failf(path, format string, args ...any) {
	d.fail(path, fmt.Errorf(format, args...))
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// JoinKey appends a map key to a path: ("", "lock") -> "lock",
// ("lock", "ttl") -> "lock.ttl".
func JoinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) decode(path string, in any, v reflect.Value) {
	if in == nil {
		return
	}
	t := v.Type()
	switch {
	case t == durationType:
		d.decodeDuration(path, in, v)
		return
	case t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(textUnmarshalerType):
		d.decodeText(path, in, v)
		return
	}
	switch t.Kind() {
	case reflect.Interface:
		val := reflect.ValueOf(Normalize(in))
		if !val.Type().AssignableTo(t) {
			d.failf(path, "cannot use %s as %s", d.describeAt(path, in), t)
			return
		}
		v.Set(val)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(path, in, v.Elem())
	case reflect.String:
		s, ok := in.(string)
		if !ok {
			d.failf(path, "expected a string, got %s (quote it)", d.describeAt(path, in))
			return
		}
		v.SetString(s)
	case reflect.Bool:
		d.decodeBool(path, in, v)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		d.decodeNumber(path, in, v)
	case reflect.Slice:
		d.decodeSlice(path, in, v)
	case reflect.Map:
		d.decodeMap(path, in, v)
	case reflect.Struct:
		d.decodeStruct(path, in, v)
	default:
		d.failf(path, "unsupported target type %s", t)
	}
}

func (d *decoder) decodeDuration(path string, in any, v reflect.Value) {
	switch x := in.(type) {
	case string:
		dur, err := time.ParseDuration(strings.TrimSpace(x))
		if err != nil {
			d.failf(path, "invalid duration %s (use a Go duration such as \"500ms\", \"30s\", \"10m\")", d.quoteAt(path, x))
			return
		}
		v.SetInt(int64(dur))
	case time.Duration:
		v.SetInt(int64(x))
	default:
		d.failf(path, "expected a duration such as \"30s\", got %s", d.describeAt(path, in))
	}
}

func (d *decoder) decodeText(path string, in any, v reflect.Value) {
	s, ok := in.(string)
	if !ok {
		d.failf(path, "expected a string, got %s", d.describeAt(path, in))
		return
	}
	if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
		if d.secretPath(path) {
			d.failf(path, "invalid value %s", hidden)
		} else {
			d.failf(path, "invalid value %q: %v", s, err)
		}
	}
}

func (d *decoder) decodeBool(path string, in any, v reflect.Value) {
	switch x := in.(type) {
	case bool:
		v.SetBool(x)
	case string:
		b, err := strconv.ParseBool(x)
		if err != nil {
			d.failf(path, "expected true or false, got %s", d.quoteAt(path, x))
			return
		}
		v.SetBool(b)
	default:
		d.failf(path, "expected true or false, got %s", d.describeAt(path, in))
	}
}
