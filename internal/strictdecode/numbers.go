package strictdecode

import (
	"math"
	"reflect"
	"strconv"
	"strings"
)

// decodeNumber decodes into an integer or floating-point v: an error when
// in is not a number of that kind (or a string that parses as one) or
// does not fit v's type.
func (d *decoder) decodeNumber(path string, in any, v reflect.Value) {
	var (
		want     = "an integer"
		ok, over bool
		shown    string // the value, for an out-of-range error
		set      func()
	)
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f, isF := toFloat(in)
		want, ok, over, shown = "a number", isF, isF && v.OverflowFloat(f), strconv.FormatFloat(f, 'g', -1, 64)
		set = func() { v.SetFloat(f) }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, isN := toInt(in)
		u, isU := uint64(n), isN && n >= 0
		shown = strconv.FormatInt(n, 10)
		if !isN {
			u, isU = in.(uint64) // beyond int64
			shown = strconv.FormatUint(u, 10)
		}
		ok, over = isN || isU, !isU || v.OverflowUint(u)
		set = func() { v.SetUint(u) }
	default:
		n, isN := toInt(in)
		ok, over, shown = isN, isN && v.OverflowInt(n), strconv.FormatInt(n, 10)
		set = func() { v.SetInt(n) }
	}
	switch {
	case !ok:
		d.failf(path, "expected %s, got %s", want, d.describeAt(path, in))
	case over:
		d.failf(path, "%s out of range for %s", shown, v.Type())
	default:
		set()
	}
}

// toInt converts a number of a predeclared type (not, say, a
// time.Duration), or a string that parses completely, to an int64.
func toInt(in any) (int64, bool) {
	rv := reflect.ValueOf(in)
	if !rv.IsValid() || rv.Type().Name() != rv.Kind().String() {
		return 0, false
	}
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(rv.Uint()), rv.Uint() <= math.MaxInt64
	case reflect.Float32, reflect.Float64:
		x := rv.Float()
		if x != math.Trunc(x) || x < math.MinInt64 || x >= math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case reflect.String:
		n, err := strconv.ParseInt(strings.TrimSpace(rv.String()), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func toFloat(in any) (float64, bool) {
	switch x := in.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	if n, ok := toInt(in); ok {
		return float64(n), true
	}
	if u, ok := in.(uint64); ok {
		return float64(u), true
	}
	return 0, false
}
