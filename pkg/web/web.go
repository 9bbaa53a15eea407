// Package web owns the HTTP conventions both services share: Echo defaults, the one error→HTTP mapping,
// request binding (query, form, multipart `_json` and JSON all equivalent), range/sort and X-Total, the
// authentication middleware (Bearer key, session cookie with CSRF check, basic), request logs and metrics.
package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/openir/platform/pkg/apperr"
)

// APIConfig is what the HTTP layer of either service takes from its wiring besides its domain services and
// its own settings (each service's api.Config embeds it).
type APIConfig struct {
	Log       *slog.Logger
	Auth      AuthConfig
	Secure    SecureConfig
	SearchMax int // the largest page of a search (search.max)
	// Limits bound request bodies and JSON documents (http.body_limit…); MaxFile is the largest uploaded file
	// (analysis-svc: job.max_file; case-svc: observable.max_file), streamed to disk.
	Limits  Limits
	MaxFile int64
	// DownloadPassword protects the zips of /api/datastorezip (datastore.password; empty = "malware"),
	// reported in /api/status as protectDownloadsWith.
	DownloadPassword string
}

// Options configure the shared Echo defaults.
type Options struct {
	Log    *slog.Logger
	Limits Limits // request bodies, JSON documents and the request deadline; zero values are the defaults
	// Ready reports whether the service's dependencies (the database) answer; served at /readyz.
	Ready func(ctx context.Context) error
	// Collectors are the service's own metrics, served at /metrics with the HTTP ones.
	Collectors []prometheus.Collector
}

// New returns an Echo instance with request ids, panic recovery, body limits (see Limits), JSON request logs,
// Prometheus metrics at /metrics, /healthz and /readyz, and the error handler of DECISIONS.md.
func New(opts Options) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = ErrorHandler(opts.Log)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := newMetrics(reg)
	reg.MustRegister(opts.Collectors...)

	e.Use(requestID)
	e.Use(m.middleware, requestLog(opts.Log))
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisableErrorHandler: true, // the request log middleware hands the error to ErrorHandler, which logs it once
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			return apperr.Wrap(apperr.Internal, "panic", fmt.Errorf("%w\n%s", err, stack))
		},
	}))
	lim := opts.Limits.withDefaults()
	e.Use(limitBodies(lim, newPools(lim.JSON)))
	e.Use(requestDeadline(opts.Limits.Request))
	e.Use(securityHeaders)

	e.GET("/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", func(c echo.Context) error {
		if opts.Ready != nil {
			ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
			defer cancel()
			if err := opts.Ready(ctx); err != nil {
				opts.Log.Warn("not ready", "err", err)
				return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
			}
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	return e
}

func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		return next(c)
	}
}

const requestIDKey = "request_id"

// deadlineKey holds the request's context as it was before requestDeadline bounded it.
const deadlineKey = "web.undeadlined"

// requestDeadline bounds the context of every request by timeout (Limits.Request; 0 = none).
func requestDeadline(timeout time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if timeout <= 0 {
				return next(c)
			}
			c.Set(deadlineKey, c.Request().Context())
			defer setDeadline(c, timeout)()
			return next(c)
		}
	}
}

// setDeadline replaces the request's deadline by d from now (0 = none), keeping its values and the
// cancellation of the client going away; the returned function releases it.
func setDeadline(c echo.Context, d time.Duration) func() {
	orig, ok := c.Get(deadlineKey).(context.Context)
	if !ok {
		return func() {}
	}
	cur := c.Request().Context()
	ctx, cancel := context.WithCancel(context.WithoutCancel(cur)) // values as they are now, no deadline
	stop := context.AfterFunc(orig, cancel)                       // the client went away
	if d > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, d)
		prev := cancel
		cancel = func() { cancelT(); prev() }
	}
	c.SetRequest(c.Request().WithContext(ctx))
	return func() { stop(); cancel() }
}

// LongPoll is the route middleware of long polls (waitreport, stream polls): they bound their own wait, so
// the request deadline (Limits.Request) does not apply to them.
func LongPoll(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		defer setDeadline(c, 0)()
		return next(c)
	}
}

// requestID takes the caller's X-Request-Id when it is short and printable (it ends up in logs), or makes one.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !validRequestID(id) {
			id = randomID()
		}
		c.Set(requestIDKey, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if r < '!' || r > '~' {
			return false
		}
	}
	return true
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// RequestID returns the id of the request, as sent back in X-Request-Id.
func RequestID(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}

type errorBody struct {
	Type    string              `json:"type"`
	Message string              `json:"message"`
	Errors  []apperr.FieldError `json:"errors,omitempty"`
}

var kinds = map[apperr.Kind]struct {
	status int
	typ    string
}{
	apperr.Internal:        {http.StatusInternalServerError, "InternalError"},
	apperr.BadRequest:      {http.StatusBadRequest, "BadRequest"},
	apperr.Invalid:         {http.StatusBadRequest, "AttributeCheckingError"},
	apperr.Conflict:        {http.StatusBadRequest, "CreateError"},
	apperr.Unauthenticated: {http.StatusUnauthorized, "AuthenticationError"},
	apperr.Forbidden:       {http.StatusForbidden, "AuthorizationError"},
	apperr.NotFound:        {http.StatusNotFound, "NotFoundError"},
	apperr.TooLarge:        {http.StatusRequestEntityTooLarge, "BadRequest"},
	apperr.RateLimited:     {http.StatusTooManyRequests, "RateLimitExceeded"},
	apperr.Unavailable:     {http.StatusServiceUnavailable, "ServiceUnavailable"},
	apperr.Unprocessable:   {http.StatusUnprocessableEntity, "BadRequest"},
}

// echoKinds maps Echo's own errors (unknown route, wrong method, body too large…) to our kinds.
var echoKinds = map[int]apperr.Kind{
	http.StatusBadRequest:            apperr.BadRequest,
	http.StatusUnauthorized:          apperr.Unauthenticated,
	http.StatusForbidden:             apperr.Forbidden,
	http.StatusNotFound:              apperr.NotFound,
	http.StatusRequestEntityTooLarge: apperr.TooLarge,
	http.StatusTooManyRequests:       apperr.RateLimited,
}

// StatusClientClosed is the status of a request whose client went away before the answer.
const StatusClientClosed = 499

// ErrorHandler is the one place where errors become HTTP responses: {"type","message"} with the status of
// DECISIONS.md. The cause is logged (5xx only, once, with the request id) and never sent.
func ErrorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		if errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil {
			// The client went away (a page left while its stream's long poll waited): nobody reads the answer,
			// and it is no server error. 499 is the status proxies log for it.
			_ = c.NoContent(StatusClientClosed)
			return
		}
		status, body := toResponse(err)
		if status >= 500 {
			log.Error("request failed", "request_id", RequestID(c), "method", c.Request().Method,
				"route", c.Path(), "err", err)
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		_ = c.JSON(status, body)
	}
}

func toResponse(err error) (int, errorBody) {
	var he *echo.HTTPError
	if e := apperr.As(err); (e == nil || e.Kind == apperr.Internal) && errors.Is(err, context.DeadlineExceeded) {
		return http.StatusInternalServerError, errorBody{Type: "InternalError", Message: "the request took too long"}
	}
	if e := apperr.As(err); e != nil {
		k := kinds[e.Kind]
		return k.status, errorBody{Type: k.typ, Message: apperr.SafeMessage(e, "internal error"), Errors: e.Fields}
	}
	if errors.As(err, &he) {
		kind, ok := echoKinds[he.Code]
		if !ok {
			if he.Code >= 500 {
				return he.Code, errorBody{Type: "InternalError", Message: "internal error"}
			}
			return he.Code, errorBody{Type: "BadRequest", Message: http.StatusText(he.Code)}
		}
		msg := http.StatusText(he.Code)
		if s, ok := he.Message.(string); ok && he.Code != http.StatusInternalServerError {
			msg = s
		}
		return he.Code, errorBody{Type: kinds[kind].typ, Message: msg}
	}
	return http.StatusInternalServerError, errorBody{Type: "InternalError", Message: "internal error"}
}

// requestLog writes one JSON line per request. It logs the route and path, never the query string or
// headers (they may carry keys or passwords).
func requestLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			status := c.Response().Status
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelWarn
			}
			log.LogAttrs(c.Request().Context(), level, "request",
				slog.String("request_id", RequestID(c)),
				slog.String("method", c.Request().Method),
				slog.String("route", c.Path()),
				slog.String("path", c.Request().URL.Path),
				slog.Int("status", status),
				slog.Int64("bytes", c.Response().Size),
				slog.Float64("ms", float64(time.Since(start).Microseconds())/1000),
			)
			return nil
		}
	}
}

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "http_request_duration_seconds", Help: "HTTP request latency by route and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

func (m *metrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		route := c.Path() // a registered route's pattern, never the request's path
		if route == "" {
			route = "unmatched"
		}
		method := metricMethod(c.Request().Method)
		m.requests.WithLabelValues(route, method, metricStatus(c.Response().Status)).Inc()
		m.latency.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
		return err
	}
}

// ErrorStatus is the status and message the API answers for err (an internal error's message is the generic
// one): for pages that show an error in HTML.
func ErrorStatus(err error) (int, string) {
	status, body := toResponse(err)
	return status, body.Message
}

// metricMethod is the method label: the methods of RFC 9110 and PATCH, every other one "other". A client
// chooses the method, and each label value is a series kept for the life of the process.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// metricStatus is the status label: a status from 100 to 599, else "other".
func metricStatus(s int) string {
	if s < 100 || s > 599 {
		return "other"
	}
	return strconv.Itoa(s)
}
