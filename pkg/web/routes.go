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
	r.E.Add(method, path, h, append(append([]echo.MiddlewareFunc(nil), r.MW...), extra...)...)
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

// Param returns a path parameter, percent-decoded (logins hold "@" and "+", which clients encode).
func Param(c echo.Context, name string) string {
	v := c.Param(name)
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}
