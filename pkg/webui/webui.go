// Package webui is what the web interfaces of both services share: the page layout and the login page, the
// style sheet, the script and the icon (served under content-hashed names, cached for a year), the security
// headers of every page (a strict Content-Security-Policy: no inline script or style, nothing from another
// host), the CSRF token a page's forms send, and the template functions (markdown, JSON tree, dates, levels).
// Each service keeps its own pages (case-svc/internal/webui, analysis-svc/internal/webui): it parses them with
// Parse, renders them with Render and registers the shared assets with Assets.
//
// Pages are rendered on the server over the domain services; writes go through the service's own REST API
// from the script (ui.js), with the session cookie and the CSRF header, so that permissions, validation and
// the audit trail are exactly those of the API.
package webui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/web"
)

// Prefix is where the interface is served.
const Prefix = "/ui"

//go:embed static templates
var shared embed.FS

// asset is a static file served under a content-hashed name.
type asset struct {
	body        []byte
	contentType string
}

var (
	assets    = map[string]asset{}  // hashed name -> file
	assetPath = map[string]string{} // plain name -> /ui/static/<hashed name>
)

func init() {
	entries, err := fs.ReadDir(shared, "static")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(shared, "static/"+e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		ext := path.Ext(e.Name())
		hashed := strings.TrimSuffix(e.Name(), ext) + "." + hex.EncodeToString(sum[:6]) + ext
		assets[hashed] = asset{body: b, contentType: mime.TypeByExtension(ext)}
		assetPath[e.Name()] = Prefix + "/static/" + hashed
	}
}

// Asset returns the path of a shared static file (ui.css, ui.js, favicon.svg) under its hashed name.
func Asset(name string) string {
	p, ok := assetPath[name]
	if !ok {
		panic("webui: no asset " + name)
	}
	return p
}

// Assets registers GET /ui/static/:name (the hashed files, cached for a year: a new content is a new name)
// and GET /favicon.ico.
func Assets(e *echo.Echo) {
	e.GET(Prefix+"/static/:name", func(c echo.Context) error {
		a, ok := assets[c.Param("name")]
		if !ok {
			return echo.NewHTTPError(http.StatusNotFound, "no such file")
		}
		c.Response().Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		return c.Blob(http.StatusOK, a.contentType, a.body)
	})
	e.GET("/favicon.ico", func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, Asset("favicon.svg"))
	})
}

// CSP is the Content-Security-Policy of every page: only this origin, no inline script or style, no frames.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Headers sets the security headers of a page (the service's middleware sets nosniff, no-store and the
// others for every response).
func Headers(c echo.Context) {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// Page is what the layout needs of every page; a service's page data embeds it.
type Page struct {
	Service string // the product name in the title bar
	Title   string
	CSRF    string // the session's CSRF token, echoed by ui.js in X-XSRF-TOKEN
	User    string // login of the signed-in user; "" on the login page
	Name    string
	Org     string
	Orgs    []string
	Nav     []Link // the top bar's links
	Current string // the Nav entry of this page
	Status  []Link // the top bar's status items (servers' state)
}

// Link is an entry of the top bar.
type Link struct {
	Name, Href, ID string
	Badge          string // a live counter's current value ("" = none)
	Class          string
}

// Base fills the fields of Page that come from the request: the CSRF token (the session's, from its cookie).
func Base(c echo.Context, service, title string) Page {
	p := Page{Service: service, Title: title}
	if ck, err := c.Cookie(auth.CSRFCookie); err == nil {
		p.CSRF = ck.Value
	}
	return p
}

// Templates are a service's pages, each parsed with the shared layout.
type Templates struct {
	pages map[string]*template.Template
}

// Parse parses every page of pages (files matching glob) with the shared layout, partials and functions, and
// the service's own partials (files matching partials, may be ""). A page is named by its file name without
// ".html" and defines "content" (and may define "head-title"). funcs adds the service's functions.
func Parse(pages fs.FS, glob, partials string, funcs template.FuncMap) (*Templates, error) {
	base := template.New("").Funcs(Funcs()).Funcs(funcs)
	base, err := base.ParseFS(shared, "templates/*.html")
	if err != nil {
		return nil, err
	}
	if partials != "" {
		if base, err = base.ParseFS(pages, partials); err != nil {
			return nil, err
		}
	}
	t := &Templates{pages: map[string]*template.Template{}}
	add := func(name string, from fs.FS, file string) error {
		p, err := base.Clone()
		if err != nil {
			return err
		}
		if p, err = p.ParseFS(from, file); err != nil {
			return err
		}
		t.pages[name] = p
		return nil
	}
	for _, name := range []string{"login", "error"} {
		if err := add(name, shared, "templates/page/"+name+".html"); err != nil {
			return nil, err
		}
	}
	files, err := fs.Glob(pages, glob)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := add(strings.TrimSuffix(path.Base(f), ".html"), pages, f); err != nil {
			return nil, fmt.Errorf("page %s: %w", f, err)
		}
	}
	return t, nil
}

// Render executes a page ("layout" around its "content") or, with fragment, only the named template of it,
// into a buffer first (an error renders nothing half-way), and writes it with the page headers. The buffers
// are reused (renderBufs) rather than grown from nothing, copied at every step, for each page. slots are the
// large parts Go code writes where the template printed their markers (Slot).
func (t *Templates) Render(c echo.Context, status int, page, fragment string, data any, slots ...Slot) error {
	p, ok := t.pages[page]
	if !ok {
		return fmt.Errorf("webui: no page %s", page)
	}
	name := "layout"
	if fragment != "" {
		name = fragment
	}
	buf := renderBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledPage {
			buf.Reset()
			renderBufs.Put(buf)
		}
	}()
	if err := p.ExecuteTemplate(buf, name, data); err != nil {
		return fmt.Errorf("render %s/%s: %w", page, name, err)
	}
	Headers(c)
	if len(slots) == 0 {
		return c.HTMLBlob(status, buf.Bytes())
	}
	// The page up to each slot's marker, then the slot, written in pieces straight to the response.
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	w := c.Response()
	out := buf.Bytes()
	for {
		next, at := -1, len(out) // the slot whose marker comes first
		for k, s := range slots {
			if s.marker == "" {
				continue // not set: the page does not show it
			}
			if i := bytes.Index(out, []byte(s.marker)); i >= 0 && i < at {
				next, at = k, i
			}
		}
		if next < 0 {
			break
		}
		if _, err := w.Write(out[:at]); err != nil {
			return err
		}
		if err := slots[next].writeTo(w); err != nil {
			return err
		}
		out = out[at+len(slots[next].marker):]
	}
	_, err := w.Write(out)
	return err
}

// renderBufs are Render's buffers; one grown past maxPooledPage is left to the collector.
var renderBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledPage = 8 << 20

// Pages lists the parsed pages' names (the tests render each).
func (t *Templates) Pages() []string {
	out := make([]string, 0, len(t.pages))
	for n := range t.pages {
		out = append(out, n)
	}
	return out
}

// LoginPage is the data of the shared login page.
type LoginPage struct {
	Page
	Next    string // where to go after signing in (a path of this service)
	Expired bool   // the session ended (inactivity or sign-out elsewhere)
	API     string // the service's login route
}

// SafeNext keeps a return path only when it is a path of this interface (no scheme, no host, no //).
func SafeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, Prefix+"/") ||
		strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return Prefix + "/"
	}
	return u.RequestURI()
}

// LoginRedirect sends an unauthenticated page request to the login page with the page to return to.
func LoginRedirect(c echo.Context) error {
	return c.Redirect(http.StatusSeeOther, Prefix+"/login?next="+url.QueryEscape(c.Request().URL.RequestURI())+"&expired=1")
}

// ErrorData is the data of the shared error page.
type ErrorData struct {
	Page
	Code    int
	Message string
}

// ErrorPage renders err as the shared error page, with the status and message the API answers for it (an
// internal error's cause is logged, never shown); base is the layout's data of the request.
func (t *Templates) ErrorPage(c echo.Context, err error, log *slog.Logger, base Page) error {
	status, msg := web.ErrorStatus(err)
	if status >= 500 {
		log.Error("page failed", "request_id", web.RequestID(c), "route", c.Path(), "err", err)
	}
	base.Title = http.StatusText(status)
	return t.Render(c, status, "error", "", ErrorData{Page: base, Code: status, Message: msg})
}

// Login serves the shared login page of service, which signs in through its API route api and returns to
// the page named by next (a page of this interface only).
func (t *Templates) Login(service, api string) echo.HandlerFunc {
	return func(c echo.Context) error {
		return t.Render(c, http.StatusOK, "login", "", LoginPage{Page: Base(c, service, "Sign in"), API: api,
			Next: SafeNext(c.QueryParam("next")), Expired: c.QueryParam("expired") != ""})
	}
}
