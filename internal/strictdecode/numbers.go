package strictdecode

import (
	"math"
	"reflect"
	"strconv"
	"strings"
)

func (d *decoder) decodeInt(path string, in any, v reflect.Value) {
	n, ok := toInt(in)
	if !ok {
		d.failf(path, "expected an integer, got %s", d.describeAt(path, in))
		return
	}
	if v.OverflowInt(n) {
		d.failf(path, "%d out of range for %s", n, v.Type())
		return
	}
	v.SetInt(n)
}

func (d *decoder) decodeUint(path string, in any, v reflect.Value) {
	n, ok := toInt(in)
	if !ok {
		if u, isU := in.(uint64); isU {
			if v.OverflowUint(u) {
				d.failf(path, "%d out of range for %s", u, v.Type())
				return
			}
			v.SetUint(u)
			return
		}
		d.failf(path, "expected an integer, got %s", d.describeAt(path, in))
		return
	}
	if n < 0 || v.OverflowUint(uint64(n)) {
		d.failf(path, "%d out of range for %s", n, v.Type())
		return
	}
	v.SetUint(uint64(n))
}

func (d *decoder) decodeFloat(path string, in any, v reflect.Value) {
	f, ok := toFloat(in)
	if !ok {
		d.failf(path, "expected a number, got %s", d.describeAt(path, in))
		return
	}
	if v.OverflowFloat(f) {
		d.failf(path, "%g out of range for %s", f, v.Type())
		return
	}
	v.SetFloat(f)
}

func toInt(in any) (int64, bool) {
	switch x := in.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint:
		return int64(x), uint64(x) <= math.MaxInt64
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	case float32:
		return toInt(float64(x))
	case float64:
		if x != math.Trunc(x) || x < math.MinInt64 || x >= math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
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
