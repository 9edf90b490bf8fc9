package strictdecode

import (
	"errors"
	"fmt"
)

// ErrUnknownKey is matched (errors.Is) by the FieldError Decode returns for
// a key that has no field in the target struct.
var ErrUnknownKey = errors.New("unknown key")

// FieldError is one problem found by Decode, located by its key path
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

// Error reads "unknown key", with the suggestion when there is one.
func (e *UnknownKeyError) Error() string { return "unknown key" + e.hint() }

// At names the key's full path: `unknown key lock.tll (did you mean "ttl"?)`.
func (e *UnknownKeyError) At(path string) string { return "unknown key " + path + e.hint() }

func (e *UnknownKeyError) hint() string {
	if e.Suggestion == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
}

func (e *UnknownKeyError) Is(target error) bool { return target == ErrUnknownKey }
