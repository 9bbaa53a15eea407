package api

import (
	"encoding/json"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/query"
	"github.com/openir/platform/pkg/web"
)

// templateStatus is the status every case template shows (TheHive 3's templates had one; TheHive 4 answers it).
const templateStatus = "Ok"

// rewriteTemplateStatus gives case template searches the `status` that every template shows as "Ok": thehive4py
// 1.8 (get_case_template, with its default version THEHIVE_3) searches {"_and": [{name}, {"_field": "status",
// "_value": "Ok"}]}. A status term becomes {} (every template) for "Ok" and {"_not": {}} (none) for another
// value, in the forms {"_field": "status", "_value": v} and {"status": v}, anywhere in the query.
func rewriteTemplateStatus(c echo.Context) error {
	f, err := web.Fields(c)
	if err != nil {
		return err
	}
	q, ok := f["query"]
	if !ok {
		return nil
	}
	if s, isString := q.(string); isString {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return nil // web.Search reports it
		}
		q = v
	}
	out, err := query.WalkFilter(q, templateStatusTerm)
	if err != nil {
		return err
	}
	f["query"] = out
	return nil
}

// templateStatusTerm is WalkFilter's rewrite of a status term (rewriteTemplateStatus).
func templateStatusTerm(v map[string]any, _ func(any) (any, error)) (any, bool, error) {
	var status any
	switch {
	case len(v) == 2 && v["_field"] == "status":
		status = v["_value"]
	case len(v) == 1 && v["status"] != nil:
		status = v["status"]
	}
	switch {
	case status == nil:
		return nil, false, nil
	case status == templateStatus:
		return map[string]any{}, true, nil
	default:
		return map[string]any{"_not": map[string]any{}}, true, nil
	}
}
