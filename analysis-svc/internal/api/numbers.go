package api

import (
	"bytes"
	"encoding/json"

	"github.com/openir/platform/pkg/apperr"
)

// Free-form JSON (a job's data and parameters, a report's summary, full, operations) keeps its numbers as
// the client or the worker wrote them: decoded with json.Number, stored as that text, encoded back as is.
// 1.0 stays 1.0 and 9223372036854775807 stays exact, where float64 would give 1 and 9223372036854775808.

// rawValue decodes raw JSON with its numbers as json.Number; absent or null is nil.
func rawValue(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// rawObject is rawValue for a field that must be an object (or absent/null: nil).
func rawObject(name string, raw json.RawMessage) (map[string]any, error) {
	v, err := rawValue(raw)
	if err != nil {
		return nil, apperr.Fields(apperr.FieldError{Name: name, Message: "malformed JSON"})
	}
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, apperr.Fields(apperr.FieldError{Name: name, Message: "expected an object"})
	}
	return m, nil
}
