package webui

import (
	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/apperr"
)

const authedKey = "webui.authed"

// Authed runs a page behind the service's API middleware (authentication, then organization…, in order): a
// request the middleware refuses as unauthenticated goes to the login page with the page to come back to;
// any other error, the middleware's or the page's, is rendered by errorPage (with the API's status).
func Authed(page echo.HandlerFunc, errorPage func(echo.Context, error) error, mw ...echo.MiddlewareFunc) echo.HandlerFunc {
	inner := func(c echo.Context) error {
		c.Set(authedKey, true)
		return page(c)
	}
	for i := len(mw) - 1; i >= 0; i-- {
		inner = mw[i](inner)
	}
	return func(c echo.Context) error {
		err := inner(c)
		if err == nil {
			return nil
		}
		if !Authenticated(c) && apperr.KindOf(err) == apperr.Unauthenticated {
			return LoginRedirect(c)
		}
		return errorPage(c, err)
	}
}

// Authenticated reports whether the request went through Authed's middleware (its caller is set): an error
// page rendered before has no top bar.
func Authenticated(c echo.Context) bool {
	ok, _ := c.Get(authedKey).(bool)
	return ok
}
