package webui

import (
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/identity"
)

// funcs are analysis-svc's template functions beside pkg/webui's.
func funcs() template.FuncMap {
	return template.FuncMap{
		"dataText": dataText,
		// authKinds are a webhook's authentications.
		"authKinds": func() []string { return []string{"none", "basic", "bearer"} },
		// roleList is a user's roles as the role choice's value ("read,analyze").
		"roleList": func(rs []identity.Role) string {
			out := make([]string, len(rs))
			for i, r := range rs {
				out[i] = string(r)
			}
			return strings.Join(out, ",")
		},
		// took is the time between two instants ("" when either is unknown).
		"took": func(from, to time.Time) string {
			if from.IsZero() || to.IsZero() {
				return ""
			}
			return to.Sub(from).Round(time.Millisecond).String()
		},
		// confValue is a configuration value as text: a secret item only as set or not set.
		"confValue": func(v any, secret bool) string {
			if secret {
				if v == nil || v == "" {
					return "not set"
				}
				return "set (hidden)"
			}
			return dataText(v)
		},
		// runOf is the route that runs a job's worker again.
		"runOf": func(j analysis.Job) string { return "/api/" + string(j.Kind) + "/" + j.WorkerID + "/run" },
		// defsOf is one kind's table of the catalog page.
		"defsOf": func(kind string, defs []analysis.Definition, admin bool) defsTable {
			return defsTable{Kind: kind, Defs: defs, Admin: admin}
		},
	}
}

// dataText renders a job's data or a configuration value: a string as is, anything else as JSON.
func dataText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case fmt.Stringer:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

type defsTable struct {
	Kind  string
	Defs  []analysis.Definition
	Admin bool
}
