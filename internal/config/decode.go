package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/slotlock/slotlock/internal/strictdecode"
	"github.com/slotlock/slotlock/jobs"
)

// decoder decodes the file's sections and each job strictly. Its errors
// hide values under credential-looking keys and mask URLs, as the plugins'
// own (jobs.DecodeParams) do.
var decoder = strictdecode.Decoder{
	Secret: jobs.LooksSecret,
	Mask:   func(v string) string { return jobs.MaskValue(v) },
}

// decodeJob decodes one list item over the per-job defaults. It returns
// false when the item is not a map at all (nothing further to check).
func (l *loader) decodeJob(i int, item any) (Job, bool) {
	j := DefaultJob()
	path := "jobs[" + strconv.Itoa(i) + "]"
	m, ok := item.(map[string]any)
	if !ok {
		l.errs = append(l.errs, &Error{Path: path, Index: i, Where: l.where(path),
			Err: fmt.Errorf("expected a job (a map with name, schedule, plugin, ...), got %s", describe(item))})
		return j, false
	}
	name, _ := m["name"].(string)
	if err := decoder.Decode(m, &j); err != nil {
		l.addDecodeErrors(path, i, name, err)
	}
	return j, true
}

// addDecodeErrors turns the decoder's (or a plugin factory's) errors, each
// a *strictdecode.FieldError, into Errors under prefix.
func (l *loader) addDecodeErrors(prefix string, index int, job string, err error) {
	for _, e := range flatten(err) {
		path := prefix
		var fe *strictdecode.FieldError
		if errors.As(e, &fe) {
			path = joinSub(prefix, fe.Path)
			e = fe.Err
		}
		if !errors.Is(e, strictdecode.ErrUnknownKey) {
			if l.undecodable == nil {
				l.undecodable = map[string]bool{}
			}
			l.undecodable[path] = true
		}
		l.errs = append(l.errs, &Error{Path: path, Index: index, Job: job, Err: e, Where: l.where(path)})
	}
}

// joinSub appends a decoder's path ("a.b", "a[1]") to prefix.
func joinSub(prefix, sub string) string {
	switch {
	case sub == "":
		return prefix
	case strings.HasPrefix(sub, "[") && prefix != "":
		return prefix + sub
	}
	return strictdecode.JoinKey(prefix, sub)
}

// flatten returns the leaves of a tree of joined errors.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// describe names a value for an error: `the string "report"`, "a map",
// "integer 5".
func describe(v any) string {
	if _, ok := v.(string); ok {
		return "the " + decoder.Describe(v)
	}
	return decoder.Describe(v)
}
