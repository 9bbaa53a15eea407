// Package route is what the route groups of case-svc's API share: their routes registered under a prefix
// (Routes), the caller of an authenticated request (Caller, which the router's organisation middleware sets),
// the bookkeeping fields every record renders (Meta), a task as create requests write it (TaskRequest), and
// the small conversions between request fields, domain values and JSON that the groups use (Change,
// TimeChange, StringsChange, TimeOpt, Flag, Millis, NullMillis, NullString, MapSlice, ToMap, NamesIn).
package route

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
	"github.com/openir/platform/pkg/web"
)

// Routes registers routes under a path prefix through web.Routes, which applies the middleware chain per
// route: an Echo group with middleware would also answer unknown paths under its prefix through the chain
// (401 instead of 404).
type Routes struct {
	web.Routes
	Prefix string
}

// GET registers a GET route under the prefix.
func (r Routes) GET(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.Routes.GET(r.Prefix+path, h, m...)
}

// POST registers a POST route under the prefix.
func (r Routes) POST(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.Routes.POST(r.Prefix+path, h, m...)
}

// PATCH registers a PATCH route under the prefix.
func (r Routes) PATCH(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.Routes.PATCH(r.Prefix+path, h, m...)
}

// DELETE registers a DELETE route under the prefix.
func (r Routes) DELETE(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.Routes.DELETE(r.Prefix+path, h, m...)
}

// OrgHeader names the organisation a request works in (the reference system's header and cookie).
const OrgHeader = "X-Organisation"

const callerKey = "case.caller"

// SetCaller records the caller of the request.
func SetCaller(c echo.Context, cl identity.Caller) { c.Set(callerKey, cl) }

// Caller returns the caller of the request (the zero caller before authentication).
func Caller(c echo.Context) identity.Caller {
	cl, _ := c.Get(callerKey).(identity.Caller)
	return cl
}

// Meta is the bookkeeping part of every record (spec §1): _id and id are equal, updatedBy and updatedAt are
// null until the record changes.
type Meta struct {
	ID        string  `json:"_id"`
	IDAlias   string  `json:"id"`
	Type      string  `json:"_type"`
	CreatedBy string  `json:"createdBy"`
	CreatedAt int64   `json:"createdAt"`
	UpdatedBy *string `json:"updatedBy"`
	UpdatedAt *int64  `json:"updatedAt"`
}

// MetaOf renders the bookkeeping of a record with its id and _type.
func MetaOf(id, typ string, m record.Meta) Meta {
	out := Meta{ID: id, IDAlias: id, Type: typ, CreatedBy: m.CreatedBy, CreatedAt: Millis(m.CreatedAt)}
	if !m.UpdatedAt.IsZero() {
		out.UpdatedAt, out.UpdatedBy = NullMillis(m.UpdatedAt), &m.UpdatedBy
	}
	return out
}

// Millis is a timestamp as the contract writes it: epoch milliseconds.
func Millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// NullMillis writes a zero time as null.
func NullMillis(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixMilli()
	return &v
}

// NullString writes "" as null.
func NullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Change turns a request field into a domain change.
func Change[T any](o web.Opt[T]) record.Change[T] { return record.Change[T](o) }

// MapSlice renders each element of a list.
func MapSlice[T, R any](in []T, f func(T) R) []R {
	out := make([]R, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

// NamesIn reads a filter on a fixed list: none, or names (equality, _in, joined by _and with everything).
func NamesIn(f search.Node) (want []string, filtered bool, err error) {
	switch f.Op {
	case search.OpAll:
		return nil, false, nil
	case search.OpEq:
		return []string{fmt.Sprint(f.Value)}, true, nil
	case search.OpIn:
		for _, v := range f.Values {
			want = append(want, fmt.Sprint(v))
		}
		return want, true, nil
	case search.OpAnd:
		var sets [][]string
		for _, ch := range f.Children {
			w, fl, err := NamesIn(ch)
			if err != nil {
				return nil, false, err
			}
			if fl {
				sets = append(sets, w)
			}
		}
		if len(sets) == 0 {
			return nil, false, nil
		}
		want = sets[0]
		for _, s := range sets[1:] {
			want = slices.DeleteFunc(want, func(n string) bool { return !slices.Contains(s, n) })
		}
		return want, true, nil
	}
	return nil, false, apperr.New(apperr.BadRequest, "profiles and observable types can only be filtered by name")
}

// TimeOpt turns an optional epoch-milliseconds request field into an optional time.
func TimeOpt(p *int64) *time.Time {
	if p == nil {
		return nil
	}
	t := time.UnixMilli(*p)
	return &t
}

// TimeChange turns an epoch-milliseconds request field into a domain change.
func TimeChange(o web.Opt[int64]) record.Change[time.Time] {
	return record.Change[time.Time]{Set: o.Set, Null: o.Null, V: time.UnixMilli(o.V)}
}

// StringsChange turns a list request field into a domain change.
func StringsChange(o web.Opt[web.Strings]) record.Change[[]string] {
	return record.Change[[]string]{Set: o.Set, Null: o.Null, V: []string(o.V)}
}

// Flag reads a boolean option such as nstats from the query string or the body.
func Flag(c echo.Context, name string) bool {
	f, err := web.Fields(c)
	if err != nil {
		return false
	}
	switch v := f[name].(type) {
	case bool:
		return v
	case string:
		b, _ := strconv.ParseBool(v)
		return b
	}
	return false
}

// TaskRequest is a task in a create request (a case's tasks, a template's tasks, or a task alone).
type TaskRequest struct {
	Title       string `json:"title"`
	Group       string `json:"group"`
	Description string `json:"description"`
	Owner       string `json:"owner"`
	Assignee    string `json:"assignee"`
	Status      string `json:"status"`
	Flag        bool   `json:"flag"`
	StartDate   *int64 `json:"startDate"`
	EndDate     *int64 `json:"endDate"`
	DueDate     *int64 `json:"dueDate"`
	Order       *int   `json:"order"`
}

// Input is the domain's request.
func (r TaskRequest) Input() task.Input {
	owner := r.Owner
	if owner == "" {
		owner = r.Assignee
	}
	return task.Input{Title: r.Title, Group: r.Group, Description: r.Description, Owner: owner, Status: r.Status,
		Flag: r.Flag, StartDate: TimeOpt(r.StartDate), EndDate: TimeOpt(r.EndDate), DueDate: TimeOpt(r.DueDate),
		Order: r.Order}
}

// ToMap renders a response value as the JSON object a client reads, its numbers with their exact text.
func ToMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	err = dec.Decode(&m)
	return m, err
}
