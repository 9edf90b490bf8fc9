package jobs

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrUnknownKey is matched (errors.Is) by the FieldError DecodeParams
// returns for a key that has no field in the target struct.
var ErrUnknownKey = errors.New("unknown key")

// FieldError is one problem found by DecodeParams, located by its key path
// relative to the decoded map: "command[1]", "headers.X-Api-Key",
// "retry.max". Path is "" for a problem with the whole value.
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

// UnknownKeyError is the Err of a FieldError for a key that has no field
// in the target. errors.Is(err, ErrUnknownKey) holds.
type UnknownKeyError struct {
	// Suggestion is the known key closest to the unknown one when it looks
	// like a typo of it, else "".
	Suggestion string
}

func (e *UnknownKeyError) Error() string {
	if e.Suggestion != "" {
		return fmt.Sprintf("unknown key (did you mean %q?)", e.Suggestion)
	}
	return "unknown key"
}

func (e *UnknownKeyError) Is(target error) bool { return target == ErrUnknownKey }

// DecodeParams decodes params (as a YAML or JSON decoder produces them:
// maps, lists, strings, numbers, booleans) into the struct, map or other
// value that into points to. It is strict:
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
// Struct fields are matched by their `yaml:"name"` tag, or by the field name
// in lower case when untagged; `yaml:"-"` skips a field, and an embedded
// struct (or `yaml:",inline"`) contributes its fields. A null value leaves
// the field as it was, so defaults can be set before decoding.
//
// DecodeParams reports every problem, not only the first: the error is an
// errors.Join of *FieldError values, one per problem, sorted by path. An
// error about a value under a key that LooksSecret names the value's type
// but never shows the value.
func DecodeParams(params map[string]any, into any) error {
	rv := reflect.ValueOf(into)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("jobs: DecodeParams: target must be a non-nil pointer, got %T", into)
	}
	if params == nil {
		return nil
	}
	var d decoder
	d.decode("", params, rv.Elem())
	return errors.Join(d.errs...)
}

type decoder struct{ errs []error }

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

func joinPath(path, key string) string {
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
	if t == durationType {
		d.decodeDuration(path, in, v)
		return
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(textUnmarshalerType) {
		s, ok := in.(string)
		if !ok {
			d.failf(path, "expected a string, got %s", describeAt(path, in))
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			if secretPath(path) {
				d.failf(path, "invalid value %s", hidden)
			} else {
				d.failf(path, "invalid value %q: %v", s, err)
			}
		}
		return
	}
	switch t.Kind() {
	case reflect.Interface:
		val := reflect.ValueOf(normalize(in))
		if !val.Type().AssignableTo(t) {
			d.failf(path, "cannot use %s as %s", describeAt(path, in), t)
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
			d.failf(path, "expected a string, got %s (quote it)", describeAt(path, in))
			return
		}
		v.SetString(s)
	case reflect.Bool:
		switch x := in.(type) {
		case bool:
			v.SetBool(x)
		case string:
			b, err := strconv.ParseBool(x)
			if err != nil {
				d.failf(path, "expected true or false, got %s", quoteAt(path, x))
				return
			}
			v.SetBool(b)
		default:
			d.failf(path, "expected true or false, got %s", describeAt(path, in))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := toInt(in)
		if !ok {
			d.failf(path, "expected an integer, got %s", describeAt(path, in))
			return
		}
		if v.OverflowInt(n) {
			d.failf(path, "%d out of range for %s", n, t)
			return
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, ok := toInt(in)
		if !ok {
			if u, isU := in.(uint64); isU {
				if v.OverflowUint(u) {
					d.failf(path, "%d out of range for %s", u, t)
					return
				}
				v.SetUint(u)
				return
			}
			d.failf(path, "expected an integer, got %s", describeAt(path, in))
			return
		}
		if n < 0 || v.OverflowUint(uint64(n)) {
			d.failf(path, "%d out of range for %s", n, t)
			return
		}
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		f, ok := toFloat(in)
		if !ok {
			d.failf(path, "expected a number, got %s", describeAt(path, in))
			return
		}
		if v.OverflowFloat(f) {
			d.failf(path, "%g out of range for %s", f, t)
			return
		}
		v.SetFloat(f)
	case reflect.Slice:
		src := reflect.ValueOf(in)
		if src.Kind() != reflect.Slice && src.Kind() != reflect.Array {
			d.failf(path, "expected a list, got %s", describeAt(path, in))
			return
		}
		out := reflect.MakeSlice(t, src.Len(), src.Len())
		for i := range src.Len() {
			d.decode(fmt.Sprintf("%s[%d]", path, i), src.Index(i).Interface(), out.Index(i))
		}
		v.Set(out)
	case reflect.Map:
		m, ok := asMap(in)
		if !ok {
			d.failf(path, "expected a map, got %s", describeAt(path, in))
			return
		}
		if t.Key().Kind() != reflect.String {
			d.failf(path, "unsupported map key type %s", t.Key())
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(t, len(m)))
		}
		for _, k := range sortedKeys(m) {
			elem := reflect.New(t.Elem()).Elem()
			if old := v.MapIndex(reflect.ValueOf(k).Convert(t.Key())); old.IsValid() {
				elem.Set(old)
			}
			d.decode(joinPath(path, k), m[k], elem)
			v.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), elem)
		}
	case reflect.Struct:
		m, ok := asMap(in)
		if !ok {
			d.failf(path, "expected a map, got %s", describeAt(path, in))
			return
		}
		fields := structFields(t)
		for _, k := range sortedKeys(m) {
			idx, ok := fields[k]
			if !ok {
				d.fail(joinPath(path, k), &UnknownKeyError{Suggestion: suggest(k, fields)})
				continue
			}
			d.decode(joinPath(path, k), m[k], fieldByIndexAlloc(v, idx))
		}
	default:
		d.failf(path, "unsupported target type %s", t)
	}
}

func (d *decoder) decodeDuration(path string, in any, v reflect.Value) {
	switch x := in.(type) {
	case string:
		dur, err := time.ParseDuration(strings.TrimSpace(x))
		if err != nil {
			d.failf(path, "invalid duration %s (use a Go duration such as \"500ms\", \"30s\", \"10m\")", quoteAt(path, x))
			return
		}
		v.SetInt(int64(dur))
	case time.Duration:
		v.SetInt(int64(x))
	default:
		d.failf(path, "expected a duration such as \"30s\", got %s", describeAt(path, in))
	}
}

// fieldByIndexAlloc is v.FieldByIndex that allocates nil embedded pointers.
func fieldByIndexAlloc(v reflect.Value, idx []int) reflect.Value {
	for i, x := range idx {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// structFields maps key names to field index paths, with inline (embedded)
// structs flattened. Outer fields win over inner ones of the same name.
func structFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	var walk func(t reflect.Type, prefix []int, depth int)
	walk = func(t reflect.Type, prefix []int, depth int) {
		if depth > 8 {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" {
				continue
			}
			idx := append(slices.Clone(prefix), i)
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			inline := strings.Contains(","+opts+",", ",inline,") || (f.Anonymous && name == "")
			if inline && ft.Kind() == reflect.Struct {
				walk(ft, idx, depth+1)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			if old, dup := out[name]; dup && len(old) <= len(idx) {
				continue
			}
			out[name] = idx
		}
	}
	walk(t, nil, 0)
	return out
}

// asMap accepts map[string]any and the map[any]any that some YAML decoders
// produce (keys are formatted with %v).
func asMap(in any) (map[string]any, bool) {
	switch m := in.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return out, true
	}
	rv := reflect.ValueOf(in)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	out := make(map[string]any, rv.Len())
	for it := rv.MapRange(); it.Next(); {
		out[it.Key().String()] = it.Value().Interface()
	}
	return out, true
}

// normalize turns map[any]any into map[string]any, recursively, so values
// stored in `any` fields are uniform.
func normalize(in any) any {
	switch x := in.(type) {
	case map[any]any:
		m, _ := asMap(x)
		return normalize(m)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = normalize(v)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = normalize(v)
		}
		return out
	}
	return in
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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

// hidden stands for a value an error message must not show.
const hidden = "(value hidden: the key looks like a credential)"

// secretPath reports whether the last key of a DecodeParams path ("a.b",
// "headers.Authorization", "tokens[1]") looks like it holds a credential
// (LooksSecret), so errors about its value must not show the value.
func secretPath(path string) bool {
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
	return path != "" && LooksSecret(path)
}

// quoteAt quotes s for an error about the value at path, unless the value
// may be a credential; URLs in it are masked (MaskValue).
func quoteAt(path, s string) string {
	if secretPath(path) {
		return hidden
	}
	return strconv.Quote(MaskValue(s))
}

// describeAt is describe for the value at path; under a credential-looking
// key it names only the type, never the value.
func describeAt(path string, in any) string {
	if !secretPath(path) {
		return describe(in)
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
	return describe(in) // lists, maps, null: no value shown
}

// describe names the YAML type of a value for error messages.
func describe(in any) string {
	switch x := in.(type) {
	case nil:
		return "null"
	case string:
		// Masked before it is cut, so a cut URL is still masked whole.
		x = MaskValue(x)
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

// suggest returns the known key closest to k when it is a plausible typo.
func suggest(k string, fields map[string][]int) string {
	best, bestDist := "", 3
	lk := strings.ToLower(k)
	for name := range fields {
		dist := editDistance(lk, name)
		if dist < bestDist || (dist == bestDist && best != "" && name < best) {
			best, bestDist = name, dist
		}
	}
	if best == "" || bestDist > max(1, len(best)/3) {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of neighbours each cost 1.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
