package jobs

import "github.com/slotlock/slotlock/internal/strictdecode"

// ErrUnknownKey is matched (errors.Is) by the FieldError DecodeParams
// returns for a key that has no field in the target struct.
var ErrUnknownKey = strictdecode.ErrUnknownKey

// FieldError is one problem found by DecodeParams, located by its key path
// relative to the decoded map: "command[1]", "headers.X-Api-Key",
// "retry.max". Path is "" for a problem with the whole value.
type FieldError = strictdecode.FieldError

// UnknownKeyError is the Err of a FieldError for a key that has no field
// in the target; its Suggestion is the known key closest to the unknown
// one when it looks like a typo of it. errors.Is(err, ErrUnknownKey) holds.
type UnknownKeyError = strictdecode.UnknownKeyError

// paramsDecoder is the strict decoder behind DecodeParams: errors never show
// a value under a key that LooksSecret, and mask the URLs in the values they
// show (MaskValue).
var paramsDecoder = strictdecode.Decoder{
	Secret: LooksSecret,
	Mask:   func(v string) string { return MaskValue(v) },
}

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
	return paramsDecoder.Decode(params, into)
}

// DecodeParamsHiding is DecodeParams for params that carry credentials by
// their place (SecretParams): errors about a value at a path for which
// secret returns true (paths as "env.DB_PASS", "command[2]", "body") name
// the value's type, never the value.
func DecodeParamsHiding(params map[string]any, into any, secret func(path string) bool) error {
	dc := paramsDecoder
	dc.SecretPath = secret
	return dc.Decode(params, into)
}
