package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v4"
)

// Calendar files: a YAML list of dates, or the small subset of iCalendar
// (RFC 5545) that holiday calendars use. Whatever the parser does not
// understand in an event that matters to its dates is an error naming the
// file and line, never a date silently dropped or added.

// parseDateList reads a YAML list of YYYY-MM-DD dates.
func parseDateList(path string, b []byte) ([]time.Time, []error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		var le *yaml.LoadError
		var les *yaml.LoadErrors
		if errors.As(err, &les) && len(les.Errors) > 0 {
			le = les.Errors[0]
		}
		if le != nil || errors.As(err, &le) {
			return nil, []error{fmt.Errorf("%s:%d: invalid YAML: %s", path, le.Mark.Line, le.Message)}
		}
		return nil, []error{fmt.Errorf("%s: invalid YAML: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind != yaml.SequenceNode {
		return nil, []error{fmt.Errorf("%s:%d: want a list of dates (- 2026-12-25), got %s", path, root.Line, nodeKind(root))}
	}
	var dates []time.Time
	var errs []error
	for _, item := range root.Content {
		if item.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("%s:%d: want a date as YYYY-MM-DD, got %s", path, item.Line, nodeKind(item)))
			continue
		}
		d, err := parseDate(item.Value)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %s: %w", path, item.Line, echo(item.Value), err))
			continue
		}
		dates = append(dates, d)
	}
	return dates, errs
}

// short is a name from the file as an error shows it: as it is, or, when
// longer than an echo, cut and quoted (echo).
func short(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	return echo(s)
}
