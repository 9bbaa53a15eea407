package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/apperr"
)

// Limits bound what one request can make a service read and hold. The body limit of a request starts at
// Unauthenticated and is raised only by a successful authentication (to Body) and then, on an upload route,
// by Upload (to the route's file limit plus Body): the body of a request whose credentials are wrong or
// missing is never read past Unauthenticated, and a login can never send more than that.
type Limits struct {
	Body            int64      // JSON, form or query-bound body of an authenticated request (http.body_limit); 0 = 1 MiB
	Unauthenticated int64      // body read before authentication succeeds, login included; 0 = 64 KiB
	JSON            JSONLimits // what a JSON document in a request may hold
	// UploadTimeout is how long an upload route may take to read its body (the server's read timeout applies
	// to the others), and its answer gets a minute more; 0 = the server's timeouts.
	UploadTimeout time.Duration
	// Request is the deadline of each request's context (http.request_timeout): the database and the calls it
	// makes stop there and the request answers 500. Upload routes get UploadTimeout more, long polls (LongPoll)
	// none. 0 = no deadline.
	Request time.Duration
}

// Default limits.
const (
	DefaultBodyLimit            = 1 << 20
	DefaultUnauthenticatedLimit = 64 << 10
	// maxParts bounds the parts of a multipart body, maxPartHeader the header of one part.
	maxParts      = 64
	maxPartHeader = 16 << 10
	// maxQueryPairs bounds the key=value pairs of a query string or URL-encoded form.
	maxQueryPairs = 1000
)

func (l Limits) withDefaults() Limits {
	if l.Body <= 0 {
		l.Body = DefaultBodyLimit
	}
	if l.Unauthenticated <= 0 {
		l.Unauthenticated = DefaultUnauthenticatedLimit
	}
	if l.Unauthenticated > l.Body {
		l.Unauthenticated = l.Body
	}
	if l.JSON.String <= 0 {
		l.JSON.String = l.Body
	}
	l.JSON = l.JSON.withDefaults()
	return l
}

// ParseSize reads a size such as 64K, 1M, 1G (powers of 1024; KB, KiB, MB, MiB… are the same) or a plain
// number of bytes.
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("invalid size %q (use a number of bytes or 64K, 1M, 1G)", s)
	}
	return n * mult, nil
}

const limiterKey = "web.body"

// bodyLimiter replaces a request's body: it fails a read past the current limit with *http.MaxBytesError
// (413) and then makes the server close the connection instead of draining the rest.
type bodyLimiter struct {
	body     io.ReadCloser
	w        http.ResponseWriter // the server's own, before any middleware wraps it
	declared int64               // Content-Length, -1 when unknown
	read     int64
	limit    int64
	lim      Limits
	authed   bool
	upload   int64    // the largest file of an upload route (0: not an upload route)
	files    []string // spooled uploads, removed when the request ends
	err      error
	pools    *pools
	held     int64      // estimated memory of the request's decoded JSON, reserved in heldFrom
	heldFrom *budget    // until the request ends
	raw      *rawReader // the raw body as it is read, in pools.raw
	owner    string     // the caller's organisation (Tenant), whose share of pools.raw it uses
}

// pools are the budgets of request memory: the raw bodies of authenticated requests as they are read (a
// quarter of InFlight, an organisation at most a quarter of that; see rawBudget), and the estimated memory of
// decoding JSON, one for authenticated requests and a quarter of it for the others. A request takes raw then
// decoded, never the other way round, and holds both until it ends.
type pools struct {
	raw          *rawBudget
	authed, anon *budget
}

func newPools(l JSONLimits) *pools {
	raw := max(l.InFlight/4, 1)
	return &pools{raw: newRawBudget(raw, max(raw/4, 1)), authed: newBudget(l.InFlight), anon: newBudget(max(l.InFlight/4, 1))}
}

// reserveDecoded reserves the estimated memory of decoding the request's JSON: 413 when it is over the
// Decoded limit (or the whole budget of its pool), else it waits for room.
func (b *bodyLimiter) reserveDecoded(ctx context.Context, cost int64) error {
	if cost == 0 || b.pools == nil {
		return nil
	}
	pool := b.pools.authed
	if !b.authed {
		pool = b.pools.anon
	}
	if limit := min(b.lim.JSON.Decoded, pool.size); cost > limit {
		return apperr.Errorf(apperr.TooLarge, "JSON body too large to decode (it would take about %d bytes of memory; limit %d)", cost, limit)
	}
	if err := pool.acquire(ctx, cost); err != nil {
		return apperr.Wrap(apperr.Unavailable, "request abandoned while waiting for memory to decode it", err)
	}
	b.held, b.heldFrom = cost, pool
	return nil
}

func (b *bodyLimiter) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.read == 0 && b.declared > b.limit {
		return 0, b.tooLarge() // refused on its declared length, before reading a byte
	}
	if len(p) == 0 {
		return 0, nil
	}
	left := b.limit - b.read
	if int64(len(p)) > left+1 {
		p = p[:left+1]
	}
	n, err := b.body.Read(p)
	if int64(n) <= left {
		b.read += int64(n)
		return n, err
	}
	b.read += left
	return int(left), b.tooLarge()
}

func (b *bodyLimiter) tooLarge() error {
	b.err = &http.MaxBytesError{Limit: b.limit}
	closeUnread(b.w)
	return b.err
}

// closeUnread makes the server close the connection after the answer instead of reading the rest of the
// body. It goes through http.MaxBytesReader, whose documented effect on the server's own ResponseWriter is
// exactly that: the server then sends its answer, half-closes and waits a moment before closing, so that the
// client reads the answer rather than a connection reset.
func closeUnread(w http.ResponseWriter) {
	var one [1]byte
	_, _ = http.MaxBytesReader(w, io.NopCloser(strings.NewReader("x")), 0).Read(one[:])
}

func (b *bodyLimiter) Close() error { return b.body.Close() }

// setLimit changes the limit; a limit lower than what was read already fails the next read.
func (b *bodyLimiter) setLimit(n int64) { b.limit = n }

// authenticated raises the limit from Unauthenticated to Body.
func (b *bodyLimiter) authenticated() {
	b.authed = true
	if b.limit < b.lim.Body {
		b.setLimit(b.lim.Body)
	}
}

func (b *bodyLimiter) cleanup() {
	if b.heldFrom != nil {
		b.heldFrom.release(b.held)
		b.heldFrom, b.held = nil, 0
	}
	if b.raw != nil {
		b.pools.raw.end(b.raw)
		b.raw = nil
	}
	for _, f := range b.files {
		_ = os.Remove(f)
	}
	b.files = nil
}

// limitBodies installs the body limiter of every request at the unauthenticated limit, with the memory
// budgets p.
func limitBodies(l Limits, p *pools) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			b := &bodyLimiter{body: req.Body, w: c.Response().Writer, declared: req.ContentLength, lim: l,
				limit: l.Unauthenticated, pools: p}
			if req.Body == nil {
				b.body = http.NoBody
			}
			req.Body = b
			c.Set(limiterKey, b)
			defer func() {
				b.cleanup()
				// Echo pools its contexts: a pooled context would keep the decoded fields alive until reused.
				c.Set(fieldsKey, nil)
				c.Set(formKey, nil)
				c.Set(limiterKey, nil)
			}()
			return next(c)
		}
	}
}

func limiterOf(c echo.Context) *bodyLimiter {
	b, _ := c.Get(limiterKey).(*bodyLimiter)
	return b
}

// limitsOf returns the limits of the request (the defaults outside a service built by New).
func limitsOf(c echo.Context) Limits {
	if b := limiterOf(c); b != nil {
		return b.lim
	}
	return Limits{}.withDefaults()
}

// Upload marks an upload route: once the caller is authenticated (so it goes after Authenticate), the body may
// hold files of up to maxFile bytes each, spooled to disk while the request is read and never held in memory,
// plus Body bytes of other fields. A file over maxFile is a 413.
func Upload(maxFile int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if b := limiterOf(c); b != nil && b.authed && maxFile > 0 {
				b.upload = maxFile
				b.setLimit(maxFile + b.lim.Body)
				if t := b.lim.UploadTimeout; t > 0 {
					rc := http.NewResponseController(c.Response())
					_ = rc.SetReadDeadline(time.Now().Add(t))
					_ = rc.SetWriteDeadline(time.Now().Add(t + time.Minute)) // the answer comes after the body
					if b.lim.Request > 0 {
						defer setDeadline(c, t+b.lim.Request)()
					}
				}
			}
			return next(c)
		}
	}
}

// errTooLarge is the 413 of a body over its limit.
func errTooLarge(limit int64) error {
	return apperr.Errorf(apperr.TooLarge, "request body too large (limit %d bytes)", limit)
}

// asTooLarge turns the limiter's read error into the 413, or returns nil.
func asTooLarge(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return errTooLarge(mb.Limit)
	}
	return nil
}
