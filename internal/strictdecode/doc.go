// Package strictdecode decodes what a YAML or JSON decoder produces (maps,
// lists, strings, numbers, booleans) into typed Go values, strictly: unknown
// keys and mistyped values are errors that name their key path, every
// problem is reported rather than only the first, and values under keys
// that may hold credentials never appear in an error.
//
// It is the library behind jobs.DecodeParams (the entry for plugin authors)
// and the configuration loader (the whole file). Struct fields are matched
// by their `yaml:"name"` tag, or by the field name in lower case when
// untagged; `yaml:"-"` skips a field, and an embedded struct (or
// `yaml:",inline"`) contributes its fields. A null value leaves the field
// as it was, so defaults can be set before decoding.
package strictdecode
