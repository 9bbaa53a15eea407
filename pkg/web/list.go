package web

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// DefaultMax caps `range=all` when a service does not configure search.max.
const DefaultMax = 10000

// Search reads a list or search request: `query` (the search DSL; absent = everything), `range` and `sort`,
// from the body or the query string alike. max caps the page size (search.max).
func Search(c echo.Context, fields search.Fields, max int) (search.Node, search.Page, error) {
	f, err := Fields(c)
	if err != nil {
		return search.Node{}, search.Page{}, err
	}
	if max <= 0 {
		max = DefaultMax
	}
	q := f["query"]
	if s, ok := q.(string); ok {
		if q = jsonOrString(s); q == s {
			return search.Node{}, search.Page{}, apperr.New(apperr.BadRequest, "query must be a JSON object")
		}
	}
	node, err := search.Parse(q, fields)
	if err != nil {
		return search.Node{}, search.Page{}, err
	}
	var rng string
	switch r := f["range"].(type) {
	case nil:
	case string:
		rng = r
	case json.Number:
		rng = r.String()
	case []string:
		rng = r[0]
	default:
		return search.Node{}, search.Page{}, apperr.New(apperr.BadRequest, "range must be a string such as \"0-100\" or \"all\"")
	}
	var p search.Page
	if p.Offset, p.Limit, err = search.ParseRange(rng, max); err != nil {
		return search.Node{}, search.Page{}, err
	}
	var specs []string
	switch s := f["sort"].(type) {
	case nil:
	case string:
		specs = []string{s}
	case []string:
		specs = s
	case []any:
		for _, x := range s {
			str, ok := x.(string)
			if !ok {
				return search.Node{}, search.Page{}, apperr.New(apperr.BadRequest, "sort must be a string or an array of strings")
			}
			specs = append(specs, str)
		}
	default:
		return search.Node{}, search.Page{}, apperr.New(apperr.BadRequest, "sort must be a string or an array of strings")
	}
	if p.Sort, err = search.ParseSort(specs, fields); err != nil {
		return search.Node{}, search.Page{}, err
	}
	return node, p, nil
}

// List answers a list or search: the items as a JSON array (never null) and the full count in X-Total.
func List[T any](c echo.Context, total int64, items []T) error {
	if items == nil {
		items = []T{}
	}
	c.Response().Header().Set("X-Total", strconv.FormatInt(total, 10))
	return c.JSON(http.StatusOK, items)
}
