package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// Statistics: the _stats routes of TheHive 4.1's v0 API ({query, stats: [aggregation…]}, one per record, and
// POST /api/_stats with a list of {model, query, stats}) and the query API's aggregation step share one
// aggregation engine. Every number comes from the database's counts (docstore Count and GroupCount):
// records are never read. A grouping answers at most maxGroups distinct values (more is a 400).

// maxGroups bounds the distinct values of one grouping (field terms, time buckets, values summed).
const maxGroups = 10000

// maxDates bounds the distinct dates a time histogram reads (one count per distinct date, then bucketed):
// dates are mostly distinct, so this is about the number of records it covers.
const maxDates = 100000

// maxAggs bounds the aggregations of one request, nested ones included.
const maxAggs = 32

// maxQueries bounds the database queries of one request: a sub-aggregation runs once per group of its parent,
// so nested groupings multiply.
const maxQueries = 1000

// spend counts one database query against the request's budget.
func spend(left *int) error {
	*left--
	if *left < 0 {
		return apperr.Errorf(apperr.BadRequest, "the statistics need more than %d database queries: add _size or narrow the query", maxQueries)
	}
	return nil
}

// agg is one aggregation: count, field (terms), time (histogram), sum, avg, min, max.
type agg struct {
	op, name, field string
	order           []string
	size            int
	every           int64 // time: the interval, in units
	unit            string
	sub             []agg
}

// statsModels are the models of POST /api/_stats and the records they count.
var statsModels = map[string]cases.Record{
	"case": cases.RecordCase, "case_task": cases.RecordTask, "case_task_log": cases.RecordLog,
	"alert": cases.RecordAlert, "user": cases.RecordUser, "caseTemplate": cases.RecordTemplate,
	"case_artifact": cases.RecordObservable, "organisation": cases.RecordOrg, "customField": cases.RecordCustomField,
}

// statsScope narrows the records of a _stats route beyond the caller's scope (the case observables of
// /case/artifact/_stats, not those of alerts).
func statsScope(model string) search.Node {
	if model == "case_artifact" {
		return search.Node{Op: search.OpExists, Path: cases.PathCaseID}
	}
	return search.Node{Op: search.OpAll}
}

// stats is POST /<record>/_stats {query, stats}: the aggregations' results merged into one object.
func (h *handler) stats(model string) echo.HandlerFunc {
	return func(c echo.Context) error {
		fields, err := web.Fields(c)
		if err != nil {
			return err
		}
		left := maxQueries
		out, err := h.statsOf(c.Request().Context(), caller(c), model, fields["query"], fields["stats"], &left)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, out)
	}
}

// allStats is POST /_stats {stats: [{model, query, stats}…]}: every result deep-merged into one object.
func (h *handler) allStats(c echo.Context) error {
	fields, err := web.Fields(c)
	if err != nil {
		return err
	}
	list, ok := fields["stats"].([]any)
	if !ok {
		return apperr.Fields(apperr.FieldError{Name: "stats", Message: "must be a list of {model, query, stats}"})
	}
	if len(list) > maxAggs {
		return apperr.Fields(apperr.FieldError{Name: "stats", Message: fmt.Sprintf("at most %d entries", maxAggs)})
	}
	out := map[string]any{}
	left := maxQueries
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return apperr.Fields(apperr.FieldError{Name: "stats", Message: "must be a list of {model, query, stats}"})
		}
		model, _ := m["model"].(string)
		if _, known := statsModels[model]; !known {
			return apperr.Fields(apperr.FieldError{Name: "model", Message: fmt.Sprintf("unknown model %q", shorten(model))})
		}
		r, err := h.statsOf(c.Request().Context(), caller(c), model, m["query"], m["stats"], &left)
		if err != nil {
			return err
		}
		deepMerge(out, r)
	}
	return c.JSON(http.StatusOK, out)
}

func deepMerge(dst, src map[string]any) {
	for k, v := range src {
		if dm, ok := dst[k].(map[string]any); ok {
			if sm, ok := v.(map[string]any); ok {
				deepMerge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// statsOf runs the aggregations of one model on the records matching query (the search DSL, _parent too).
func (h *handler) statsOf(ctx context.Context, cl cases.Caller, model string, query, stats any, left *int) (map[string]any, error) {
	r := statsModels[model]
	f := search.Node{Op: search.OpAll}
	if s, isString := query.(string); isString {
		if json.Unmarshal([]byte(s), &query) != nil {
			return nil, apperr.New(apperr.BadRequest, "query must be a JSON object")
		}
	}
	if query != nil {
		n, err := parseFilter("stats", query, cases.RecordFields[r])
		if err != nil {
			return nil, err
		}
		f = n
	}
	f = search.Node{Op: search.OpAnd, Children: []search.Node{f, statsScope(model)}}
	var raw []any
	switch s := stats.(type) {
	case nil:
		raw = []any{map[string]any{"_agg": "count"}}
	case map[string]any:
		raw = []any{s}
	case []any:
		raw = s
	default:
		return nil, apperr.Fields(apperr.FieldError{Name: "stats", Message: "must be a list of objects"})
	}
	budget := maxAggs
	out := map[string]any{}
	for _, x := range raw {
		a, err := parseAgg(x, cases.RecordFields[r], &budget)
		if err != nil {
			return nil, err
		}
		res, err := h.aggregate(ctx, cl, r, f, a, true, left)
		if err != nil {
			return nil, err
		}
		deepMerge(out, res)
	}
	return out, nil
}

var intervalRe = regexp.MustCompile(`^(\d{1,6})([smhdwMy])$`)

var intervalUnits = map[string]string{"s": "SECONDS", "m": "MINUTES", "h": "HOURS", "d": "DAYS", "w": "WEEKS",
	"M": "MONTHS", "y": "YEARS"}

var unitMillis = map[string]int64{"SECONDS": 1000, "MINUTES": 60_000, "HOURS": 3_600_000, "DAYS": 86_400_000,
	"WEEKS": 7 * 86_400_000}

// parseAgg reads one aggregation in TheHive 4.1's shape: {_agg, _name?, _field, _order, _size, _select,
// _fields, _interval (or _interval + _unit)}.
func parseAgg(x any, fields search.Fields, budget *int) (agg, error) {
	*budget--
	if *budget < 0 {
		return agg{}, apperr.Fields(apperr.FieldError{Name: "stats", Message: fmt.Sprintf("at most %d aggregations", maxAggs)})
	}
	m, ok := x.(map[string]any)
	if !ok {
		return agg{}, apperr.Fields(apperr.FieldError{Name: "stats", Message: "each aggregation is an object"})
	}
	bad := func(name, format string, args ...any) error {
		return apperr.Fields(apperr.FieldError{Name: name, Message: fmt.Sprintf(format, args...)})
	}
	a := agg{}
	a.op, _ = m["_agg"].(string)
	if n, isString := m["_name"].(string); isString {
		a.name = n
	}
	field := func(key string) error {
		f, _ := m[key].(string)
		if _, ok := fields[f]; !ok {
			return bad("_field", "unknown field %q", shorten(f))
		}
		a.field = f
		return nil
	}
	switch a.op {
	case "count":
	case "sum", "avg", "min", "max":
		if err := field("_field"); err != nil {
			return agg{}, err
		}
		if fields[a.field].Type != search.Number {
			return agg{}, bad("_field", "%s is not a number", a.field)
		}
		if a.name == "" {
			a.name = a.op + "_" + a.field
		}
	case "field":
		if err := field("_field"); err != nil {
			return agg{}, err
		}
		switch o := m["_order"].(type) {
		case nil:
		case string:
			a.order = []string{o}
		case []any:
			for _, e := range o {
				s, _ := e.(string)
				a.order = append(a.order, s)
			}
		default:
			return agg{}, bad("_order", "must be a string or a list of strings")
		}
		for _, o := range a.order {
			if k := strings.TrimLeft(o, "+-"); k != "count" && k != a.field {
				return agg{}, bad("_order", "orders by count or by %s, not %q", a.field, shorten(o))
			}
		}
		if s, present := m["_size"]; present && s != nil {
			n, isNum := s.(json.Number)
			i, err := strconv.Atoi(n.String())
			if !isNum || err != nil || i < 0 {
				return agg{}, bad("_size", "must be a non-negative integer")
			}
			a.size = i
		}
	case "time":
		fs, _ := m["_fields"].([]any)
		if len(fs) == 0 {
			if f, isString := m["_field"].(string); isString {
				fs = []any{f}
			}
		}
		if len(fs) == 0 {
			return agg{}, bad("_fields", "names the date field")
		}
		m["_field"] = fs[0]
		if err := field("_field"); err != nil {
			return agg{}, err
		}
		if fields[a.field].Type != search.Number {
			return agg{}, bad("_fields", "%s is not a date", a.field)
		}
		switch iv := m["_interval"].(type) {
		case string:
			sm := intervalRe.FindStringSubmatch(iv)
			if sm == nil {
				return agg{}, bad("_interval", "must be a number and a unit (s, m, h, d, w, M, y), such as 1d")
			}
			a.every, _ = strconv.ParseInt(sm[1], 10, 64)
			a.unit = intervalUnits[sm[2]]
		case json.Number:
			a.every, _ = iv.Int64()
			a.unit, _ = m["_unit"].(string)
		default:
			return agg{}, bad("_interval", "must be a number and a unit (s, m, h, d, w, M, y), such as 1d")
		}
		if _, fixed := unitMillis[a.unit]; !fixed && a.unit != "MONTHS" && a.unit != "YEARS" {
			return agg{}, bad("_unit", "must be SECONDS, MINUTES, HOURS, DAYS, WEEKS, MONTHS or YEARS")
		}
		if a.every <= 0 || a.every > 1_000_000 {
			return agg{}, bad("_interval", "must be between 1 and 1000000")
		}
	default:
		return agg{}, bad("_agg", "unsupported aggregation %q (count, field, time, sum, avg, min, max)", shorten(fmt.Sprint(m["_agg"])))
	}
	if a.name == "" {
		a.name = a.op
	}
	if sel, present := m["_select"]; present && sel != nil {
		if a.op != "field" && a.op != "time" {
			return agg{}, bad("_select", "only field and time aggregations have sub-aggregations")
		}
		list, isList := sel.([]any)
		if !isList {
			return agg{}, bad("_select", "must be a list of aggregations")
		}
		for _, s := range list {
			sa, err := parseAgg(s, fields, budget)
			if err != nil {
				return agg{}, err
			}
			a.sub = append(a.sub, sa)
		}
	}
	return a, nil
}

// aggregate runs one aggregation on the records of r matching f. The result is an object to merge into the
// answer: {count: n}, {avg_F: x} (null without values), a field's {value: {sub…}} (under {F: …} in the v0
// _stats shape), a time histogram's {bucketStartMillis: {F: {sub…}}}. Without _select, each group holds
// its count.
func (h *handler) aggregate(ctx context.Context, cl cases.Caller, r cases.Record, f search.Node, a agg, v0 bool, left *int) (map[string]any, error) {
	path := cases.RecordFields[r][a.field].Path
	if err := spend(left); err != nil {
		return nil, err
	}
	switch a.op {
	case "count":
		n, err := h.svc.Count(ctx, cl, r, f)
		if err != nil {
			return nil, err
		}
		return map[string]any{a.name: n}, nil
	case "sum", "avg", "min", "max":
		groups, err := h.svc.Groups(ctx, cl, r, f, a.field, maxGroups)
		if err != nil {
			return nil, err
		}
		return map[string]any{a.name: reduce(a.op, groups)}, nil
	case "field":
		groups, err := h.svc.Groups(ctx, cl, r, f, a.field, maxGroups)
		if err != nil {
			return nil, err
		}
		orderGroups(groups, a)
		if a.size > 0 && len(groups) > a.size {
			groups = groups[:a.size]
		}
		out := make(map[string]any, len(groups))
		for _, g := range groups {
			in := search.Node{Op: search.OpEq, Path: path, Value: g.Value}
			if g.Value == nil {
				in = search.Node{Op: search.OpNot, Children: []search.Node{{Op: search.OpExists, Path: path}}}
			}
			sub, err := h.subAggregate(ctx, cl, r, f, in, g.Count, a.sub, left)
			if err != nil {
				return nil, err
			}
			out[statKey(g.Value)] = sub
		}
		if v0 {
			return map[string]any{a.field: out}, nil
		}
		return out, nil
	case "time":
		groups, err := h.svc.Groups(ctx, cl, r, f, a.field, maxDates)
		if err != nil {
			return nil, err
		}
		buckets := map[int64]int64{}
		for _, g := range groups {
			ms, ok := number(g.Value)
			if !ok {
				continue // no date: in no bucket
			}
			buckets[bucketOf(int64(ms), a)] += g.Count
		}
		if len(buckets) > maxGroups {
			return nil, apperr.Errorf(apperr.BadRequest, "more than %d intervals: widen _interval", maxGroups)
		}
		out := make(map[string]any, len(buckets))
		for start, n := range buckets {
			in := search.Node{Op: search.OpAnd, Children: []search.Node{
				{Op: search.OpGte, Path: path, Value: start},
				{Op: search.OpLt, Path: path, Value: nextBucket(start, a)},
			}}
			sub, err := h.subAggregate(ctx, cl, r, f, in, n, a.sub, left)
			if err != nil {
				return nil, err
			}
			out[strconv.FormatInt(start, 10)] = map[string]any{a.field: sub}
		}
		return out, nil
	}
	return nil, fmt.Errorf("aggregate: unknown op %q", a.op)
}

// subAggregate runs the sub-aggregations of one group (the records matching f and in), whose count is
// known: {count: n} without any.
func (h *handler) subAggregate(ctx context.Context, cl cases.Caller, r cases.Record, f, in search.Node, n int64, subs []agg, left *int) (map[string]any, error) {
	if len(subs) == 0 {
		return map[string]any{"count": n}, nil
	}
	out := map[string]any{}
	narrowed := search.Node{Op: search.OpAnd, Children: []search.Node{f, in}}
	for _, s := range subs {
		if s.op == "count" {
			out[s.name] = n
			continue
		}
		res, err := h.aggregate(ctx, cl, r, narrowed, s, false, left)
		if err != nil {
			return nil, err
		}
		if s.op == "field" {
			out[s.name] = res
			continue
		}
		deepMerge(out, res)
	}
	return out, nil
}

// reduce computes sum, avg, min or max from the counts of each value (numbers only; null when none).
func reduce(op string, groups []cases.ValueCount) any {
	var sum float64
	var n int64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range groups {
		v, ok := number(g.Value)
		if !ok {
			continue
		}
		sum += v * float64(g.Count)
		n += g.Count
		lo, hi = min(lo, v), max(hi, v)
	}
	switch {
	case op == "sum":
		return sum
	case n == 0:
		return nil
	case op == "avg":
		return sum / float64(n)
	case op == "min":
		return lo
	}
	return hi
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	}
	return 0, false
}

// orderGroups applies _order (count or the field, + or -); the store's order (largest count first, then by
// value) is the default.
func orderGroups(groups []cases.ValueCount, a agg) {
	if len(a.order) == 0 {
		return
	}
	slices.SortStableFunc(groups, func(x, y cases.ValueCount) int {
		for _, o := range a.order {
			desc := strings.HasPrefix(o, "-")
			var c int
			if strings.TrimLeft(o, "+-") == "count" {
				c = cmpInt(x.Count, y.Count)
			} else {
				c = strings.Compare(statKey(x.Value), statKey(y.Value))
				if xv, ok := number(x.Value); ok {
					if yv, ok := number(y.Value); ok {
						c = cmpFloat(xv, yv)
					}
				}
			}
			if desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// bucketOf is the start (epoch ms, UTC) of the interval holding ms: fixed lengths from the epoch, months and
// years on the calendar.
func bucketOf(ms int64, a agg) int64 {
	if d, fixed := unitMillis[a.unit]; fixed {
		w := d * a.every
		return int64(math.Floor(float64(ms)/float64(w))) * w
	}
	t := time.UnixMilli(ms).UTC()
	if a.unit == "YEARS" {
		y := int64(t.Year()) / a.every * a.every
		return time.Date(int(y), 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	}
	mo := int64(t.Month()-1) / a.every * a.every
	return time.Date(t.Year(), time.Month(mo+1), 1, 0, 0, 0, 0, time.UTC).UnixMilli()
}

// nextBucket is the start of the interval after the one starting at start.
func nextBucket(start int64, a agg) int64 {
	if d, fixed := unitMillis[a.unit]; fixed {
		return start + d*a.every
	}
	t := time.UnixMilli(start).UTC()
	if a.unit == "YEARS" {
		return t.AddDate(int(a.every), 0, 0).UnixMilli()
	}
	return t.AddDate(0, int(a.every), 0).UnixMilli()
}

// statKey writes a grouped value as an object key.
func statKey(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}
