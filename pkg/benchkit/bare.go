package benchkit

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/labstack/echo/v4"
)

// Bare is the HTTP floor of the request rows: a bare Echo router (no middleware, no authentication) on
// 127.0.0.1 whose routes, set by the phases, do the database work the real request needs at least (none for
// a bare round trip) and answer a fixed body of the real response's size.
type Bare struct {
	srv    *httptest.Server
	URL    string
	routes sync.Map // "METHOD /path" → bareRoute
}

// bareRoute is what a floor route does: its work (nil: none), then its body.
type bareRoute struct {
	work func(context.Context) error
	body []byte
}

// NewBare starts a bare server; Close stops it.
func NewBare() *Bare {
	b := &Bare{}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Any("/*", func(c echo.Context) error {
		v, ok := b.routes.Load(c.Request().Method + " " + c.Request().URL.Path)
		if !ok {
			return c.NoContent(http.StatusNotFound)
		}
		r := v.(bareRoute)
		_, _ = io.Copy(io.Discard, c.Request().Body)
		if r.work != nil {
			if err := r.work(c.Request().Context()); err != nil {
				return c.String(http.StatusInternalServerError, err.Error())
			}
		}
		return c.JSONBlob(http.StatusOK, r.body)
	})
	b.srv = httptest.NewServer(e)
	b.URL = b.srv.URL
	return b
}

// Set makes route ("METHOD /path") do work (nil: nothing), then answer body with 200.
func (b *Bare) Set(route string, body []byte, work func(context.Context) error) {
	b.routes.Store(route, bareRoute{work: work, body: body})
}

// Close stops the server.
func (b *Bare) Close() { b.srv.Close() }
