package web

import (
	"net/url"

	"github.com/labstack/echo/v4"
)

// Routes registers routes with a middleware chain applied to each route, not to a group: an Echo group with
// middleware also answers unknown paths below its prefix through that chain (an unknown route would answer
// 401 instead of 404).
type Routes struct {
	E  *echo.Echo
	MW []echo.MiddlewareFunc
}

func (r Routes) add(method, path string, h echo.HandlerFunc, extra []echo.MiddlewareFunc) {
	mw := append([]echo.MiddlewareFunc{DecodeParams}, r.MW...)
	r.E.Add(method, path, h, append(mw, extra...)...)
}

// DecodeParams percent-decodes the path parameters of the matched route once, before any other middleware
// of the route: the router matches the escaped path (a login "dan@example.com" arrives as
// "dan%40example.com") and leaves its parameters escaped. Every route registered through Routes has it, so
// c.Param and Param read decoded values; a value that is not a valid escape is kept as sent.
func DecodeParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		vals := c.ParamValues()
		if len(vals) > 0 {
			dec := make([]string, len(vals))
			for i, v := range vals {
				dec[i] = v
				if u, err := url.PathUnescape(v); err == nil {
					dec[i] = u
				}
			}
			c.SetParamValues(dec...)
		}
		return next(c)
	}
}

// GET registers a GET route.
func (r Routes) GET(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.add("GET", path, h, m)
}

// POST registers a POST route.
func (r Routes) POST(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.add("POST", path, h, m)
}

// PATCH registers a PATCH route.
func (r Routes) PATCH(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.add("PATCH", path, h, m)
}

// PUT registers a PUT route.
func (r Routes) PUT(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.add("PUT", path, h, m)
}

// DELETE registers a DELETE route.
func (r Routes) DELETE(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.add("DELETE", path, h, m)
}

// Param returns a path parameter, percent-decoded (logins hold "@" and "+", which clients encode) by
// DecodeParams, which every route of Routes runs first; it never decodes twice ("%2540" stays "%40").
func Param(c echo.Context, name string) string {
	return c.Param(name)
}
