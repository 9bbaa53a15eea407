package conf

import (
	"encoding/json"
	"reflect"
	"strings"
)

// jsonListHook decodes a string that holds a JSON array or object (an env variable such as
// CASE_ANALYSIS_SERVERS='[{"name":…}]') into a list or struct field.
func jsonListHook(from, to reflect.Type, data any) (any, error) {
	s, ok := data.(string)
	if !ok || from.Kind() != reflect.String {
		return data, nil
	}
	t := strings.TrimSpace(s)
	switch to.Kind() {
	case reflect.Slice:
		if !strings.HasPrefix(t, "[") {
			return data, nil
		}
		var v []any
		if err := json.Unmarshal([]byte(t), &v); err != nil {
			return nil, err
		}
		return v, nil
	case reflect.Map, reflect.Struct:
		if !strings.HasPrefix(t, "{") {
			return data, nil
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(t), &v); err != nil {
			return nil, err
		}
		return v, nil
	}
	return data, nil
}
