package strictdecode

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

func (d *decoder) decodeSlice(path string, in any, v reflect.Value) {
	src := reflect.ValueOf(in)
	if src.Kind() != reflect.Slice && src.Kind() != reflect.Array {
		d.failf(path, "expected a list, got %s", d.describeAt(path, in))
		return
	}
	out := reflect.MakeSlice(v.Type(), src.Len(), src.Len())
	for i := range src.Len() {
		d.decode(fmt.Sprintf("%s[%d]", path, i), src.Index(i).Interface(), out.Index(i))
	}
	v.Set(out)
}

func (d *decoder) decodeMap(path string, in any, v reflect.Value) {
	t := v.Type()
	m, ok := asMap(in)
	if !ok {
		d.failf(path, "expected a map, got %s", d.describeAt(path, in))
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
		key := reflect.ValueOf(k).Convert(t.Key())
		elem := reflect.New(t.Elem()).Elem()
		if old := v.MapIndex(key); old.IsValid() {
			elem.Set(old)
		}
		d.decode(JoinKey(path, k), m[k], elem)
		v.SetMapIndex(key, elem)
	}
}

func (d *decoder) decodeStruct(path string, in any, v reflect.Value) {
	m, ok := asMap(in)
	if !ok {
		d.failf(path, "expected a map, got %s", d.describeAt(path, in))
		return
	}
	fields := structFields(v.Type())
	for _, k := range sortedKeys(m) {
		idx, ok := fields[k]
		if !ok {
			d.fail(JoinKey(path, k), &UnknownKeyError{Suggestion: suggest(k, fields)})
			continue
		}
		d.decode(JoinKey(path, k), m[k], fieldByIndexAlloc(v, idx))
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
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
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

// Normalize turns map[any]any into map[string]any, recursively, so values
// stored in `any` fields (and shown from them) are uniform.
func Normalize(in any) any {
	switch x := in.(type) {
	case map[any]any:
		m, _ := asMap(x)
		return Normalize(m)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = Normalize(v)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = Normalize(v)
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
