package web

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/auth"
)

// Authenticator finds the principal behind a credential. Each method returns an Unauthenticated error when
// the credential is wrong or its user or organization is locked.
type Authenticator[P any] interface {
	ByKey(ctx context.Context, key string) (P, error)
	ByPassword(ctx context.Context, login, password string) (P, error)
	// BySession loads the principal of a valid session and the subject's current session version (see
	// auth.Session.Version); Authenticate refuses the session when its version differs, so raising the
	// stored version ends every session of the user at once.
	BySession(ctx context.Context, subject string) (P, int64, error)
}

// AuthConfig configures credentials and sessions.
type AuthConfig struct {
	Keyring    *auth.Keyring
	SessionTTL time.Duration // sliding inactivity timeout; zero = 1 h
	Basic      bool          // accept HTTP basic credentials (auth.method.basic)
	Secure     bool          // mark cookies Secure (served over TLS)
	Now        func() time.Time
	Throttle   *auth.Throttle // password attempts (login endpoint and basic); nil = none
	// Transport is the HTTPS rule of the password endpoints (RequireSecure), applied to basic credentials too;
	// its trusted proxies also say whose X-Forwarded-For names the client address the throttle counts.
	Transport SecureConfig
}

func (a AuthConfig) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a AuthConfig) ttl() time.Duration {
	if a.SessionTTL <= 0 {
		return time.Hour
	}
	return a.SessionTTL
}

const callerKey = "web.caller"

// ErrAuthentication is the one answer to a bad credential: it never says which part was wrong (the services'
// identity rules answer the same auth.ErrAuthentication).
var ErrAuthentication = auth.ErrAuthentication

// Authenticate returns a middleware that accepts, in order, a Bearer API key, the session cookie (with the
// CSRF header on state-changing requests) and, when enabled, HTTP basic credentials. The principal is then
// available through Caller. The body is not read before authentication succeeds, which raises the request's
// body limit from the unauthenticated one to Limits.Body; a refused request's body is never read (the
// connection is closed after the answer).
func Authenticate[P any](a Authenticator[P], cfg AuthConfig) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, err := authenticate(c, a, cfg)
			if err != nil {
				if b := limiterOf(c); b != nil && (b.declared < 0 || b.declared > b.lim.Unauthenticated) {
					closeUnread(b.w) // the server would otherwise read up to 256 KiB of it to keep the connection
				}
				if k := apperr.KindOf(err); k == apperr.Internal || k == apperr.Forbidden || k == apperr.RateLimited {
					return err
				}
				return ErrAuthentication
			}
			if b := limiterOf(c); b != nil {
				b.authenticated()
				if t, ok := any(p).(Tenant); ok {
					b.owner = t.Tenant()
				}
			}
			c.Set(callerKey, p)
			return next(c)
		}
	}
}

func authenticate[P any](c echo.Context, a Authenticator[P], cfg AuthConfig) (P, error) {
	var zero P
	ctx := c.Request().Context()
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	if scheme, cred, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
		cred = strings.TrimSpace(cred)
		if cred == "" {
			return zero, ErrAuthentication
		}
		return a.ByKey(ctx, cred)
	}
	if ck, err := c.Cookie(auth.SessionCookie); err == nil && ck.Value != "" && cfg.Keyring != nil {
		s, err := cfg.Keyring.ParseSession(ck.Value, cfg.now())
		if err == nil {
			if !safeMethod(c.Request().Method) &&
				!auth.Equal(c.Request().Header.Get(auth.CSRFHeader), s.CSRF) {
				return zero, apperr.New(apperr.Forbidden, "missing or wrong CSRF token (send the XSRF-TOKEN cookie's value in X-XSRF-TOKEN)")
			}
			p, version, err := a.BySession(ctx, s.Subject)
			if err != nil {
				return zero, err
			}
			if version != s.Version {
				return zero, ErrAuthentication // ended: logout, password change, lock, key revocation, …
			}
			if s.Expires.Sub(cfg.now()) < cfg.ttl()/2 {
				if tok, ns, err := cfg.Keyring.RenewSession(s, cfg.ttl(), cfg.now()); err == nil {
					setSessionCookies(c, cfg, tok, ns)
				}
			}
			return p, nil
		}
		if h == "" {
			return zero, err
		}
	}
	if login, pw, ok := c.Request().BasicAuth(); ok && cfg.Basic {
		if err := CheckSecure(c, cfg.Transport); err != nil {
			return zero, err
		}
		return CheckLogin(c, cfg, login, func() (P, error) { return a.ByPassword(ctx, login, pw) })
	}
	return zero, ErrAuthentication
}

// ErrThrottled answers a login attempt after too many failures.
var ErrThrottled = apperr.New(apperr.RateLimited, "too many failed logins; try again later")

// CheckLogin runs a password check under the login throttle. The attempt is reserved before check runs, so
// parallel attempts cannot pass the limit together: refused (429) when the login from the client's address, or
// the address, has no attempt left; kept as a failure when check fails with Unauthenticated, given back when
// check fails otherwise, and clearing the login's failures from that address when it succeeds.
func CheckLogin[T any](c echo.Context, cfg AuthConfig, login string, check func() (T, error)) (T, error) {
	var zero T
	ctx := c.Request().Context()
	at, ok, err := cfg.Throttle.Reserve(ctx, login, ClientAddr(c.Request(), cfg.Transport.TrustedProxies))
	if err != nil {
		return zero, err
	}
	if !ok {
		return zero, ErrThrottled
	}
	v, err := check()
	switch {
	case err == nil:
		at.Succeeded(ctx)
	case apperr.Is(err, apperr.Unauthenticated):
		at.Failed(ctx)
	default:
		at.Cancel(ctx)
	}
	return v, err
}

// ClientAddr is the client's IP: the peer's, or, when the peer is a trusted proxy, the nearest address of
// X-Forwarded-For that is not a trusted proxy (the addresses before it were written by the client, which
// could pick any).
func ClientAddr(r *http.Request, proxies []*net.IPNet) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if !trusted(net.ParseIP(host), proxies) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		ip := net.ParseIP(strings.TrimSpace(hops[i]))
		if ip == nil {
			break
		}
		if !trusted(ip, proxies) {
			return ip.String()
		}
	}
	return host
}

func trusted(ip net.IP, proxies []*net.IPNet) bool {
	for _, n := range proxies {
		if ip != nil && n.Contains(ip) {
			return true
		}
	}
	return false
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// Caller returns the principal set by Authenticate.
func Caller[P any](c echo.Context) P {
	p, _ := c.Get(callerKey).(P)
	return p
}

// StartSession sets the session cookie (HttpOnly, SameSite=Lax) and the CSRF cookie that a browser client
// echoes in the X-XSRF-TOKEN header. version is the subject's current session version (BySession's).
func StartSession(c echo.Context, cfg AuthConfig, subject string, version int64) error {
	tok, s, err := cfg.Keyring.IssueSession(subject, version, cfg.ttl(), cfg.now())
	if err != nil {
		return err
	}
	setSessionCookies(c, cfg, tok, s)
	return nil
}

func setSessionCookies(c echo.Context, cfg AuthConfig, tok string, s auth.Session) {
	// Behind a TLS-terminating proxy the client is on HTTPS even when this server is not.
	cfg.Secure = cfg.Secure || c.Request().TLS != nil || strings.EqualFold(c.Request().Header.Get("X-Forwarded-Proto"), "https")
	c.SetCookie(&http.Cookie{Name: auth.SessionCookie, Value: tok, Path: "/", HttpOnly: true,
		Secure: cfg.Secure, SameSite: http.SameSiteLaxMode})
	c.SetCookie(&http.Cookie{Name: auth.CSRFCookie, Value: s.CSRF, Path: "/",
		Secure: cfg.Secure, SameSite: http.SameSiteLaxMode})
}

// Logout ends the request's session server-side when its cookie holds a valid, current session (end raises
// the subject's session version, so that copies of the cookie stop working too, as do the user's other
// sessions), then clears the cookies. Without such a session it only clears them.
func Logout[P any](c echo.Context, a Authenticator[P], cfg AuthConfig, end func(ctx context.Context, subject string) error) error {
	if ck, err := c.Cookie(auth.SessionCookie); err == nil && ck.Value != "" && cfg.Keyring != nil {
		if s, err := cfg.Keyring.ParseSession(ck.Value, cfg.now()); err == nil {
			ctx := c.Request().Context()
			if _, version, err := a.BySession(ctx, s.Subject); err == nil && version == s.Version {
				if err := end(ctx, s.Subject); err != nil {
					return err
				}
			}
		}
	}
	EndSession(c, cfg)
	return nil
}

// EndSession clears the session cookies. It does not end the session itself: the service raises the user's
// session version for that.
func EndSession(c echo.Context, cfg AuthConfig) {
	for _, n := range []string{auth.SessionCookie, auth.CSRFCookie} {
		c.SetCookie(&http.Cookie{Name: n, Value: "", Path: "/", MaxAge: -1, HttpOnly: n == auth.SessionCookie,
			Secure: cfg.Secure, SameSite: http.SameSiteLaxMode})
	}
}

// SecureConfig says when a request counts as arriving over HTTPS.
type SecureConfig struct {
	AllowInsecure  bool         // http.allow_insecure_credentials: the dev flag
	TrustedProxies []*net.IPNet // peers whose X-Forwarded-Proto is believed
}

// ParseCIDRs parses proxy addresses or networks (a bare IP is a /32 or /128).
func ParseCIDRs(list []string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			if ip := net.ParseIP(s); ip != nil && ip.To4() != nil {
				s += "/32"
			} else {
				s += "/128"
			}
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// RequireSecure refuses (403) password and key calls that did not arrive over HTTPS: served with TLS, or
// through a trusted proxy that says X-Forwarded-Proto: https, unless the dev flag allows plain HTTP.
func RequireSecure(cfg SecureConfig) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := CheckSecure(c, cfg); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// CheckSecure is RequireSecure for a handler that decides per request (a user created with a password).
func CheckSecure(c echo.Context, cfg SecureConfig) error {
	if cfg.AllowInsecure || c.Request().TLS != nil || viaTrustedHTTPS(c.Request(), cfg.TrustedProxies) {
		return nil
	}
	return apperr.New(apperr.Forbidden, "password and key calls must be made over HTTPS")
}

func viaTrustedHTTPS(r *http.Request, proxies []*net.IPNet) bool {
	if !strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return trusted(net.ParseIP(host), proxies)
}
