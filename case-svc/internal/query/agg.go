package query

// Statistics: the _stats routes of TheHive 4.1's v0 API ({query, stats: [aggregation…]}, one per record, and
// POST /api/_stats with a list of {model, query, stats}) and the query's aggregation step share one
// aggregation engine. Every number comes from the database's counts (docstore Count and GroupCount):
// records are never read. A grouping answers at most maxGroups distinct values (more is a 400).

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/tally"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// maxGroups bounds the distinct values of one grouping (field terms, time buckets, values summed).
const maxGroups = 10000

// maxDates bounds the distinct dates a time histogram reads (one count per distinct date, then bucketed):
// dates are mostly distinct, so this is about the number of records it covers.
const maxDates = 100000

// MaxAggs bounds the aggregations of one request, nested ones included.
const MaxAggs = 32

// MaxQueries bounds the database queries of one request: a sub-aggregation runs once per group of its parent,
// so nested groupings multiply.
const MaxQueries = 1000

// spend counts one database query against the request's budget.
func spend(left *int) error {
	*left--
	if *left < 0 {
		return apperr.Errorf(apperr.BadRequest, "the statistics need more than %d database queries: add _size or narrow the query", MaxQueries)
	}
	return nil
}

// Agg is one aggregation (ParseAgg): count, field (terms), time (histogram), sum, avg, min, max.
type Agg struct {
	op, name, field string
	order           []string
	size            int
	every           int64 // time: the interval, in units
	unit            string
	sub             []Agg
}

// statsModels are the models of POST /api/_stats and the records they count.
var statsModels = map[string]tally.Record{
	"case": tally.RecordCase, "case_task": tally.RecordTask, "case_task_log": tally.RecordLog,
	"alert": tally.RecordAlert, "user": tally.RecordUser, "caseTemplate": tally.RecordTemplate,
	"case_artifact": tally.RecordObservable, "organisation": tally.RecordOrg, "customField": tally.RecordCustomField,
}

// statsScope narrows the records of a _stats route beyond the caller's scope (the case observables of
// /case/artifact/_stats, not those of alerts).
func statsScope(model string) search.Node {
	if model == "case_artifact" {
		return search.Node{Op: search.OpExists, Path: cases.PathCaseID}
	}
	return search.Node{Op: search.OpAll}
}

// IsStatsModel reports whether model is one of POST /api/_stats.
func IsStatsModel(model string) bool {
	_, ok := statsModels[model]
	return ok
}

// Stats runs the aggregations of one model on the records matching query (the search DSL, _parent too):
// the v0 _stats routes. left is the request's budget of database queries (MaxQueries).
func (e *Engine) Stats(ctx context.Context, cl identity.Caller, model string, query, stats any, left *int) (map[string]any, error) {
	r := statsModels[model]
	f := search.Node{Op: search.OpAll}
	if s, isString := query.(string); isString {
		if json.Unmarshal([]byte(s), &query) != nil {
			return nil, apperr.New(apperr.BadRequest, "query must be a JSON object")
		}
	}
	if query != nil {
		n, err := ParseFilter("stats", query, tally.RecordFields[r])
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
	budget := MaxAggs
	out := map[string]any{}
	for _, x := range raw {
		a, err := ParseAgg(x, tally.RecordFields[r], &budget)
		if err != nil {
			return nil, err
		}
		res, err := e.aggregate(ctx, cl, r, f, a, true, left)
		if err != nil {
			return nil, err
		}
		Merge(out, res)
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
func ParseAgg(x any, fields search.Fields, budget *int) (Agg, error) {
	*budget--
	if *budget < 0 {
		return Agg{}, apperr.Fields(apperr.FieldError{Name: "stats", Message: fmt.Sprintf("at most %d aggregations", MaxAggs)})
	}
	m, ok := x.(map[string]any)
	if !ok {
		return Agg{}, apperr.Fields(apperr.FieldError{Name: "stats", Message: "each aggregation is an object"})
	}
	bad := func(name, format string, args ...any) error {
		return apperr.Fields(apperr.FieldError{Name: name, Message: fmt.Sprintf(format, args...)})
	}
	a := Agg{}
	a.op, _ = m["_agg"].(string)
	if n, isString := m["_name"].(string); isString {
		a.name = n
	}
	field := func(key string) error {
		f, _ := m[key].(string)
		if _, ok := fields[f]; !ok {
			return bad("_field", "unknown field %q", Shorten(f))
		}
		a.field = f
		return nil
	}
	switch a.op {
	case "count":
	case "sum", "avg", "min", "max":
		if err := field("_field"); err != nil {
			return Agg{}, err
		}
		if fields[a.field].Type != search.Number {
			return Agg{}, bad("_field", "%s is not a number", a.field)
		}
		if a.name == "" {
			a.name = a.op + "_" + a.field
		}
	case "field":
		if err := field("_field"); err != nil {
			return Agg{}, err
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
			return Agg{}, bad("_order", "must be a string or a list of strings")
		}
		for _, o := range a.order {
			if k := strings.TrimLeft(o, "+-"); k != "count" && k != a.field {
				return Agg{}, bad("_order", "orders by count or by %s, not %q", a.field, Shorten(o))
			}
		}
		if s, present := m["_size"]; present && s != nil {
			n, isNum := s.(json.Number)
			i, err := strconv.Atoi(n.String())
			if !isNum || err != nil || i < 0 {
				return Agg{}, bad("_size", "must be a non-negative integer")
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
			return Agg{}, bad("_fields", "names the date field")
		}
		m["_field"] = fs[0]
		if err := field("_field"); err != nil {
			return Agg{}, err
		}
		if fields[a.field].Type != search.Number {
			return Agg{}, bad("_fields", "%s is not a date", a.field)
		}
		switch iv := m["_interval"].(type) {
		case string:
			sm := intervalRe.FindStringSubmatch(iv)
			if sm == nil {
				return Agg{}, bad("_interval", "must be a number and a unit (s, m, h, d, w, M, y), such as 1d")
			}
			a.every, _ = strconv.ParseInt(sm[1], 10, 64)
			a.unit = intervalUnits[sm[2]]
		case json.Number:
			a.every, _ = iv.Int64()
			a.unit, _ = m["_unit"].(string)
		default:
			return Agg{}, bad("_interval", "must be a number and a unit (s, m, h, d, w, M, y), such as 1d")
		}
		if _, fixed := unitMillis[a.unit]; !fixed && a.unit != "MONTHS" && a.unit != "YEARS" {
			return Agg{}, bad("_unit", "must be SECONDS, MINUTES, HOURS, DAYS, WEEKS, MONTHS or YEARS")
		}
		if a.every <= 0 || a.every > 1_000_000 {
			return Agg{}, bad("_interval", "must be between 1 and 1000000")
		}
	default:
		return Agg{}, bad("_agg", "unsupported aggregation %q (count, field, time, sum, avg, min, max)", Shorten(fmt.Sprint(m["_agg"])))
	}
	if a.name == "" {
		a.name = a.op
	}
	if sel, present := m["_select"]; present && sel != nil {
		if a.op != "field" && a.op != "time" {
			return Agg{}, bad("_select", "only field and time aggregations have sub-aggregations")
		}
		list, isList := sel.([]any)
		if !isList {
			return Agg{}, bad("_select", "must be a list of aggregations")
		}
		for _, s := range list {
			sa, err := ParseAgg(s, fields, budget)
			if err != nil {
				return Agg{}, err
			}
			a.sub = append(a.sub, sa)
		}
	}
	return a, nil
}

// aggregate runs one aggregation on the records of r matching f. The result is an object to merge into the
// answer: {Count: n}, {avg_F: x} (null without values), a field's {value: {sub…}} (under {F: …} in the v0
// _stats shape), a time histogram's {bucketStartMillis: {F: {sub…}}}. Without _select, each group holds
// its count.
func (e *Engine) aggregate(ctx context.Context, cl identity.Caller, r tally.Record, f search.Node, a Agg, v0 bool, left *int) (map[string]any, error) {
	path := tally.RecordFields[r][a.field].Path
	if err := spend(left); err != nil {
		return nil, err
	}
	switch a.op {
	case "count":
		n, err := e.tally.Count(ctx, cl, r, f)
		if err != nil {
			return nil, err
		}
		return map[string]any{a.name: n}, nil
	case "sum", "avg", "min", "max":
		groups, err := e.tally.Groups(ctx, cl, r, f, a.field, maxGroups)
		if err != nil {
			return nil, err
		}
		return map[string]any{a.name: reduce(a.op, groups)}, nil
	case "field":
		groups, err := e.tally.Groups(ctx, cl, r, f, a.field, maxGroups)
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
			sub, err := e.subAggregate(ctx, cl, r, f, in, g.Count, a.sub, left)
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
		groups, err := e.tally.Groups(ctx, cl, r, f, a.field, maxDates)
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
			sub, err := e.subAggregate(ctx, cl, r, f, in, n, a.sub, left)
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
// known: {Count: n} without any.
func (e *Engine) subAggregate(ctx context.Context, cl identity.Caller, r tally.Record, f, in search.Node, n int64, subs []Agg, left *int) (map[string]any, error) {
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
		res, err := e.aggregate(ctx, cl, r, narrowed, s, false, left)
		if err != nil {
			return nil, err
		}
		if s.op == "field" {
			out[s.name] = res
			continue
		}
		Merge(out, res)
	}
	return out, nil
}

// reduce computes sum, avg, min or max from the counts of each value (numbers only; null when none).
func reduce(op string, groups []tally.ValueCount) any {
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
func orderGroups(groups []tally.ValueCount, a Agg) {
	if len(a.order) == 0 {
		return
	}
	slices.SortStableFunc(groups, func(x, y tally.ValueCount) int {
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
func bucketOf(ms int64, a Agg) int64 {
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
func nextBucket(start int64, a Agg) int64 {
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

// Merge merges src into dst, objects key by key (the results of several aggregations into one answer).
func Merge(dst, src map[string]any) {
	for k, v := range src {
		if dm, ok := dst[k].(map[string]any); ok {
			if sm, ok := v.(map[string]any); ok {
				Merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}
