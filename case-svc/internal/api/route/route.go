// Package route is what the route groups of case-svc's API share: their routes registered under a prefix
// (Routes), the caller of an authenticated request (Caller, which the router's organisation middleware sets),
// the bookkeeping fields every record renders (Meta), and the small conversions between request fields,
// domain values and JSON that every group uses.
package route

import (
	"fmt"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
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
