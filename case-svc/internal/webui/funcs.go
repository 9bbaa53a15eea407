package webui

import (
	"fmt"
	"html/template"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/webui"
)

func urlQuery(s string) string { return url.QueryEscape(s) }

// funcs are case-svc's template functions beside pkg/webui's.
func funcs() template.FuncMap {
	return template.FuncMap{
		// taxonomies lists the summary taxonomies of an observable's reports, by analyzer name.
		"taxonomies":    taxonomies,
		"alertStatuses": func() []string { return []string{"New", "Updated", "Ignored", "Imported"} },
		// artifactBody is the create request of an observable from a report's artifact.
		"artifactBody": func(a map[string]any) map[string]any {
			return map[string]any{"dataType": a["dataType"], "data": []any{a["data"]}, "message": "from an analyzer report"}
		},
		// responderBody is the request that runs a responder of a server on an object.
		"responderBody": func(responder, server, objectType, objectID string) map[string]string {
			return map[string]string{"responderId": responder, "analysisId": server, "objectType": objectType, "objectId": objectID}
		},
		"cfValue": cfValue,
		// cfInput is a custom field's value as its form input holds it (a date for datetime-local).
		"cfInput": func(v customfield.Value) string {
			if d, ok := v.Value.(int64); ok && v.Type == customfield.TypeDate {
				return time.UnixMilli(d).UTC().Format("2006-01-02T15:04")
			}
			return cfValue(v)
		},
		"list4": func() []int { return []int{1, 2, 3, 4} },
	}
}

// Taxonomy is one short-report item of an observable, with the analyzer that reported it.
type Taxonomy struct {
	Analyzer string
	webui.Taxonomy
}

// taxonomies lists the summary taxonomies of an observable's reports (per analyzer name, its last summary),
// by analyzer name.
func taxonomies(reports map[string]any) []Taxonomy {
	names := make([]string, 0, len(reports))
	for n := range reports {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Taxonomy
	for _, n := range names {
		r, _ := reports[n].(map[string]any)
		for _, t := range webui.Taxonomies(r) {
			out = append(out, Taxonomy{Analyzer: n, Taxonomy: t})
		}
	}
	return out
}

func itoa[T int | int64](n T) string { return strconv.FormatInt(int64(n), 10) }

var errBadTab = apperr.New(apperr.NotFound, "no such tab")

// cfValue renders a custom field's value: a date as a date, null as nothing.
func cfValue(v customfield.Value) string {
	switch x := v.Value.(type) {
	case nil:
		return ""
	case int64:
		if v.Type == customfield.TypeDate {
			return webui.Date(x)
		}
	}
	return fmt.Sprint(v.Value)
}
