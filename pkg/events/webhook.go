package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/event"
	"github.com/openir/platform/pkg/search"
)

// The webhooks' records live in package event, which links no database (the domain packages name them).
type (
	// Endpoint is a webhook of an organisation (package event).
	Endpoint = event.Endpoint
	// Delivery is one event to send to one endpoint (package event).
	Delivery = event.Delivery
)

// Delivery statuses (package event).
const (
	Pending   = event.Pending
	Delivered = event.Delivered
	Dead      = event.Dead
)

// WebhookStore persists endpoints and the outbox.
type WebhookStore interface {
	CreateEndpoint(ctx context.Context, e Endpoint) error
	// Endpoint fails with ErrEndpointNotFound (also for another organisation's).
	Endpoint(ctx context.Context, org, id string) (Endpoint, error)
	// Endpoints lists the endpoints of org, or of every organisation when org is "".
	Endpoints(ctx context.Context, org string) ([]Endpoint, error)
	UpdateEndpoint(ctx context.Context, e Endpoint) error
	DeleteEndpoint(ctx context.Context, org, id string) error
	Enqueue(ctx context.Context, ds []Delivery) error
	// Head returns the first pending delivery of an endpoint in Seq order; ErrDeliveryNotFound when none.
	Head(ctx context.Context, endpoint string) (Delivery, error)
	// Claim leases a pending delivery whose lease has expired, atomically; false when another sender holds it.
	Claim(ctx context.Context, id string, now, until time.Time) (Delivery, bool, error)
	// Finish writes the outcome of an attempt and drops the lease.
	Finish(ctx context.Context, d Delivery) error
	// Deliveries lists an endpoint's deliveries, newest first.
	Deliveries(ctx context.Context, org, endpoint string, p search.Page) ([]Delivery, int64, error)
	// Resend makes a delivery of org pending again with a fresh attempt count; ErrDeliveryNotFound.
	Resend(ctx context.Context, org, id string, now time.Time) (Delivery, error)
	// Backlog counts the pending deliveries and returns the creation time of the oldest.
	Backlog(ctx context.Context) (int64, time.Time, error)
}

// Errors of webhooks.
var (
	ErrEndpointNotFound = apperr.New(apperr.NotFound, "Webhook not found")
	ErrDeliveryNotFound = apperr.New(apperr.NotFound, "Delivery not found")
	// ErrNoWebhooks answers the webhook routes and pages of a service run without webhooks.
	ErrNoWebhooks = apperr.New(apperr.NotFound, "webhooks are not configured")
)

// Sealer encrypts the endpoints' credentials at rest (the keyring of API keys).
type Sealer interface {
	Seal(plain string) (string, error)
	Open(sealed string) (string, error)
}

// WebhookConfig tunes delivery.
type WebhookConfig struct {
	MaxAttempts  int           // attempts before a delivery is dead (default 10)
	Timeout      time.Duration // one attempt (default 10 s)
	BackoffMin   time.Duration // first retry delay (default 1 s); doubles, with jitter, up to BackoffMax
	BackoffMax   time.Duration // default 10 min
	Tick         time.Duration // how often the sender looks for due deliveries (default 500 ms)
	AllowPrivate bool          // allow loopback, private and link-local targets (tests, labs)
	UserAgent    string        // the User-Agent of deliveries (default "webhook")
	// MaxEndpoints bounds the webhooks of one organisation (default 20); MaxInFlightPerOrg the attempts of one
	// organisation's endpoints under way at once in a process (default 2), so that one organisation's many or
	// failing endpoints leave the sender's work to the others. An endpoint whose next delivery waits for its
	// retry costs no work until then (the sender remembers when it is due, at most waitMemory ahead).
	MaxEndpoints, MaxInFlightPerOrg int
}

func (c *WebhookConfig) defaults() {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 10
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 10 * time.Minute
	}
	if c.Tick <= 0 {
		c.Tick = 500 * time.Millisecond
	}
	if c.MaxEndpoints <= 0 {
		c.MaxEndpoints = 20
	}
	if c.MaxInFlightPerOrg <= 0 {
		c.MaxInFlightPerOrg = 2
	}
	if c.UserAgent == "" {
		c.UserAgent = "webhook"
	}
}

// eventFields are the fields an endpoint's filter may name.
var eventFields = search.Fields{
	"operation": {Path: "operation"}, "objectType": {Path: "objectType"}, "objectId": {Path: "objectId"},
	"rootId": {Path: "rootId"}, "requestId": {Path: "requestId"}, "user": {Path: "user"},
}

// ParseFilter checks an endpoint filter (the query API's filter language over operation, objectType,
// objectId, rootId, requestId, user).
func ParseFilter(raw json.RawMessage) (search.Node, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return search.Node{Op: search.OpAll}, nil
	}
	return search.ParseJSON(raw, eventFields)
}

// match evaluates a filter on an event's fields in memory.
func match(n search.Node, f map[string]string) bool {
	switch n.Op {
	case search.OpAll, "":
		return true
	case search.OpAnd:
		for _, c := range n.Children {
			if !match(c, f) {
				return false
			}
		}
		return true
	case search.OpOr:
		for _, c := range n.Children {
			if match(c, f) {
				return true
			}
		}
		return false
	case search.OpNot:
		return len(n.Children) == 1 && !match(n.Children[0], f)
	case search.OpEq:
		return f[n.Path] == fmt.Sprint(n.Value)
	case search.OpIn:
		for _, v := range n.Values {
			if f[n.Path] == fmt.Sprint(v) {
				return true
			}
		}
		return false
	case search.OpExists:
		return f[n.Path] != ""
	case search.OpLike:
		return strings.Contains(strings.ToLower(f[n.Path]), strings.ToLower(fmt.Sprint(n.Value)))
	case search.OpPrefix:
		return strings.HasPrefix(f[n.Path], fmt.Sprint(n.Value))
	case search.OpSuffix:
		return strings.HasSuffix(f[n.Path], fmt.Sprint(n.Value))
	}
	return false // comparisons and wildcards on these text fields match nothing
}

// payload is the body of a delivery: the reference system's v0 webhook fields plus id.
type payload struct {
	ID           string         `json:"id"`
	Operation    string         `json:"operation"`
	Details      map[string]any `json:"details"`
	ObjectType   string         `json:"objectType"`
	ObjectID     string         `json:"objectId"`
	Base         bool           `json:"base"`
	StartDate    int64          `json:"startDate"`
	RootID       string         `json:"rootId"`
	RequestID    string         `json:"requestId"`
	Object       map[string]any `json:"object"`
	Organisation string         `json:"organisation"`
}

// Sender delivers the outbox.
type Sender struct {
	store   WebhookStore
	sealer  Sealer
	cfg     WebhookConfig
	metrics *Metrics
	log     *slog.Logger
	now     func() time.Time
	client  *http.Client
	kick    chan struct{}

	mu       sync.Mutex
	inflight map[string]bool // endpoints with an attempt under way in this process
	orgBusy  map[string]int  // attempts under way per organisation
	// notBefore is when an endpoint's first pending delivery, as last read, may be attempted (its retry or
	// another sender's lease): until then a round does not read it again. An attempt of this process, a resend
	// and the end of the time forget it; another replica's progress is seen then, at most waitMemory later.
	notBefore map[string]time.Time
	wg        sync.WaitGroup
}

// waitMemory bounds how long a round trusts a head it read (another replica may deliver it meanwhile).
const waitMemory = time.Minute

func newSender(st WebhookStore, sealer Sealer, cfg WebhookConfig, m *Metrics, log *slog.Logger, now func() time.Time) *Sender {
	s := &Sender{store: st, sealer: sealer, cfg: cfg, metrics: m, log: log, now: now, kick: make(chan struct{}, 1),
		inflight: map[string]bool{}, orgBusy: map[string]int{}, notBefore: map[string]time.Time{}}
	dialer := &net.Dialer{Timeout: cfg.Timeout, Control: guard(cfg.AllowPrivate)}
	s.client = &http.Client{
		Timeout: cfg.Timeout,
		Transport: &http.Transport{Proxy: nil, DialContext: dialer.DialContext, MaxIdleConnsPerHost: 4,
			TLSHandshakeTimeout: cfg.Timeout, ResponseHeaderTimeout: cfg.Timeout},
		// A redirect could lead anywhere: it is an answer like any other (not 2xx: a failure).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return s
}

// ErrRefusedAddress is the error of a connection to an address webhooks may not reach.
var ErrRefusedAddress = errors.New("webhook target address refused (loopback, private, link-local or metadata); set webhook.allow_private to allow it")

// guard checks, on the address actually dialled (after name resolution, so a name that resolves to an
// internal address is refused too), that it is a public unicast address and none of this host's (allowed).
func guard(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip := net.ParseIP(host)
		if ip == nil || !allowed(ip) {
			return ErrRefusedAddress
		}
		return nil
	}
}

// refusedNets are the IPv4 ranges no webhook reaches besides those of the net.IP predicates: "this network"
// (0.0.0.0/8, which Linux connects to the host itself), carrier NAT, IETF protocol assignments, benchmarking,
// the reserved 240/4 (broadcast included). IPv6 ranges that are not globally routed unicast: site-local,
// discard-only, documentation, and the local-use NAT64 prefix (whose embedding varies).
var refusedNets = func() []*net.IPNet {
	var out []*net.IPNet
	for _, c := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4",
		"fec0::/10", "100::/64", "2001:db8::/32", "64:ff9b:1::/48"} {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			panic(err)
		}
		out = append(out, n)
	}
	return out
}()

// Public reports whether ip is a public unicast address: not loopback, private, link-local (which holds the
// cloud metadata address 169.254.169.254), carrier NAT, unspecified, multicast or another refused range, and
// no IPv4 address embedded in an IPv6 one (IPv4-mapped and -compatible, NAT64 64:ff9b::/96, 6to4, Teredo's
// server and client, ISATAP) is one of those.
func Public(ip net.IP) bool {
	if !publicOne(ip) {
		return false
	}
	for _, v4 := range embeddedIPv4(ip) {
		if !publicOne(v4) {
			return false
		}
	}
	return true
}

func publicOne(ip net.IP) bool {
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, n := range refusedNets {
		if n.Contains(ip) {
			return false
		}
	}
	return true
}

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries, decoded before the check so that no
// translation or tunnel form reaches an address refused in its plain form.
func embeddedIPv4(ip net.IP) []net.IP {
	b := ip.To16()
	if b == nil || ip.To4() != nil { // IPv4, or IPv4-mapped (To4 decodes it, the predicates check it)
		return nil
	}
	v4 := func(x []byte) net.IP { return net.IPv4(x[0], x[1], x[2], x[3]) }
	var out []net.IP
	zero12 := true
	for _, x := range b[:12] {
		zero12 = zero12 && x == 0
	}
	switch {
	case zero12: // IPv4-compatible ::a.b.c.d (:: and ::1 are checked as they are)
		out = append(out, v4(b[12:]))
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && allZero(b[4:12]): // NAT64 64:ff9b::/96
		out = append(out, v4(b[12:]))
	case b[0] == 0x20 && b[1] == 0x02: // 6to4 2002:a.b.c.d::/48
		out = append(out, v4(b[2:6]))
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0: // Teredo 2001::/32: server, then client (inverted)
		out = append(out, v4(b[4:8]), net.IPv4(^b[12], ^b[13], ^b[14], ^b[15]))
	}
	if (b[8]|0x02) == 0x02 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe { // ISATAP interface id ::0:5efe:a.b.c.d
		out = append(out, v4(b[12:]))
	}
	return out
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// ownAddress reports whether ip is an address of one of this host's interfaces (read on each call: they
// change), which reaches the service's own host like the loopback does.
func ownAddress(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // unknown: refused
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	for _, v4 := range embeddedIPv4(ip) {
		if ownAddress(v4) {
			return true
		}
	}
	return false
}

// allowed reports whether a webhook may reach ip: a public address that is none of this host's.
func allowed(ip net.IP) bool { return Public(ip) && !ownAddress(ip) }

// CheckURL checks an endpoint URL: http or https with a host; a literal address must be public unless
// allowPrivate (names are checked on each delivery, once resolved).
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(raw) > 2048 || !utf8.ValidString(raw) {
		return apperr.Fields(apperr.FieldError{Name: "url", Message: "an http or https URL with a host and no credentials"})
	}
	if ip := net.ParseIP(strings.Trim(u.Hostname(), "[]")); ip != nil && !allowPrivate && !allowed(ip) {
		return apperr.Fields(apperr.FieldError{Name: "url", Message: "a loopback, private, link-local or reserved address, or one of this host's, is refused"})
	}
	return nil
}

// plan returns the deliveries of events to the enabled endpoints of their organisation whose filter matches.
func (s *Sender) plan(ctx context.Context, evs []Event) ([]Delivery, error) {
	var ds []Delivery
	byOrg := map[string][]Endpoint{}
	for _, e := range evs {
		eps, ok := byOrg[e.Org]
		if !ok {
			var err error
			if eps, err = s.store.Endpoints(ctx, e.Org); err != nil {
				return nil, err
			}
			byOrg[e.Org] = eps
		}
		d, err := deliveries(e, eps)
		if err != nil {
			return nil, err
		}
		ds = append(ds, d...)
	}
	return ds, nil
}

// Kick makes the sender look for due deliveries now.
func (s *Sender) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// deliveries returns the deliveries of an event to those of eps that are enabled and whose filter matches.
func deliveries(e Event, eps []Endpoint) ([]Delivery, error) {
	fields := map[string]string{"operation": e.Operation, "objectType": e.ObjectType, "objectId": e.ObjectID,
		"rootId": e.RootID, "requestId": e.RequestID, "user": e.User}
	var ds []Delivery
	var body []byte
	for _, ep := range eps {
		if !ep.Enabled {
			continue
		}
		f, err := ParseFilter(json.RawMessage(ep.Filter))
		if err != nil || !match(f, fields) {
			continue
		}
		if body == nil {
			var err error
			body, err = json.Marshal(payload{ID: e.ID, Operation: e.Operation, Details: e.Details, ObjectType: e.ObjectType,
				ObjectID: e.ObjectID, Base: true, StartDate: e.Date.UnixMilli(), RootID: e.RootID, RequestID: e.RequestID,
				Object: e.Object, Organisation: e.Org})
			if err != nil {
				return nil, err
			}
		}
		ds = append(ds, Delivery{ID: e.ID + ":" + ep.ID, EventID: e.ID, Endpoint: ep.ID, Org: e.Org, Seq: e.ID,
			Payload: string(body), Status: Pending, NextAttempt: e.Date, CreatedAt: e.Date})
	}
	return ds, nil
}

// Run delivers until ctx ends, then waits for the attempts under way.
func (s *Sender) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Tick)
	defer t.Stop()
	gauge := time.NewTicker(5 * time.Second)
	defer gauge.Stop()
	s.gauges(ctx)
	for {
		select {
		case <-ctx.Done():
			s.wg.Wait()
			return
		case <-t.C:
		case <-s.kick:
		case <-gauge.C:
			s.gauges(ctx)
			continue
		}
		s.round(ctx)
	}
}

func (s *Sender) gauges(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, oldest, err := s.store.Backlog(cctx)
	if err != nil {
		return
	}
	s.metrics.depth.Set(float64(n))
	if n == 0 || oldest.IsZero() {
		s.metrics.oldest.Set(0)
	} else {
		s.metrics.oldest.Set(s.now().Sub(oldest).Seconds())
	}
}

// Forget makes the next round read the endpoint's first pending delivery again (a resend may have made an
// earlier one pending).
func (s *Sender) Forget(endpoint string) {
	s.mu.Lock()
	delete(s.notBefore, endpoint)
	s.mu.Unlock()
}

// round starts an attempt for each endpoint whose first pending delivery is due: one delivery at a time per
// endpoint, in order, so a delivery waiting for its retry holds the later ones back; at most
// MaxInFlightPerOrg at once per organisation. An endpoint known to wait (notBefore) and the endpoints of an
// organisation at its limit cost no read: one organisation's failing endpoints neither take the others' turns
// nor make every round read them.
func (s *Sender) round(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	eps, err := s.store.Endpoints(cctx, "")
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("webhook endpoints", "err", err)
		}
		return
	}
	now := s.now()
	live := make(map[string]bool, len(eps))
	for _, ep := range eps {
		live[ep.ID] = true
	}
	s.mu.Lock()
	for id, t := range s.notBefore { // deleted endpoints, and waits that are over
		if !t.After(now) || !live[id] {
			delete(s.notBefore, id)
		}
	}
	s.mu.Unlock()
	for _, ep := range eps {
		if !ep.Enabled {
			continue
		}
		s.mu.Lock()
		_, waits := s.notBefore[ep.ID]
		busy := waits || s.inflight[ep.ID] || s.orgBusy[ep.Org] >= s.cfg.MaxInFlightPerOrg
		s.mu.Unlock()
		if busy {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		head, err := s.store.Head(cctx, ep.ID)
		if err != nil || head.NextAttempt.After(now) || head.LeaseUntil.After(now) {
			cancel()
			if err == nil {
				s.mu.Lock()
				s.notBefore[ep.ID] = earlier(later(head.NextAttempt, head.LeaseUntil), now.Add(waitMemory))
				s.mu.Unlock()
			}
			continue
		}
		// The lease outlives the attempt: another replica retries only after a crash.
		d, ok, err := s.store.Claim(cctx, head.ID, now, now.Add(2*s.cfg.Timeout+5*time.Second))
		cancel()
		if err != nil || !ok {
			continue
		}
		s.mu.Lock()
		s.inflight[ep.ID] = true
		s.orgBusy[ep.Org]++
		s.mu.Unlock()
		s.wg.Add(1)
		go func(ep Endpoint, d Delivery) {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.inflight, ep.ID)
				delete(s.notBefore, ep.ID) // the next round reads its next delivery
				if s.orgBusy[ep.Org]--; s.orgBusy[ep.Org] <= 0 {
					delete(s.orgBusy, ep.Org)
				}
				s.mu.Unlock()
				select { // the next delivery of the endpoint may be due
				case s.kick <- struct{}{}:
				default:
				}
			}()
			s.attempt(context.WithoutCancel(ctx), ep, d)
		}(ep, d)
	}
}

// later and earlier pick one of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// attempt sends one delivery and writes its outcome.
func (s *Sender) attempt(ctx context.Context, ep Endpoint, d Delivery) {
	status, err := s.send(ctx, ep, d)
	d.Attempts++
	d.LastStatus = status
	d.LastError = ""
	d.LeaseUntil = time.Time{}
	now := s.now()
	result := "delivered"
	switch {
	case err == nil && status >= 200 && status < 300:
		d.Status, d.DeliveredAt = Delivered, now
	default:
		if err != nil {
			d.LastError = errorText(err)
			if errors.Is(err, ErrRefusedAddress) {
				result = "refused"
			}
		} else {
			d.LastError = fmt.Sprintf("the receiver answered %d", status)
		}
		if result != "refused" {
			result = "failed"
		}
		if d.Attempts >= s.cfg.MaxAttempts {
			d.Status = Dead
			result = "dead"
		} else {
			d.NextAttempt = now.Add(s.backoff(d.Attempts))
		}
	}
	s.metrics.deliveries.WithLabelValues(result).Inc()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.store.Finish(cctx, d); err != nil {
		s.log.Error("webhook delivery outcome", "delivery", d.ID, "err", err) // the lease expires: sent again
	}
}

// errorText is the reason of a failed attempt without the URL (which may hold a token in its query).
func errorText(err error) string {
	if errors.Is(err, ErrRefusedAddress) {
		return ErrRefusedAddress.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	// A failed lookup names the resolver ("… on 10.0.0.10:53"): the service's network, not the receiver's.
	var de *net.DNSError
	if errors.As(err, &de) && de.Server != "" {
		msg = strings.Replace(msg, " on "+de.Server, "", 1)
	}
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}

// backoff is BackoffMin doubled per attempt up to BackoffMax, with full jitter over its upper half.
func (s *Sender) backoff(attempts int) time.Duration {
	d := s.cfg.BackoffMin
	for i := 1; i < attempts && d < s.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, s.cfg.BackoffMax)
	half := int64(d / 2)
	if half <= 0 {
		return d
	}
	j, err := rand.Int(rand.Reader, big.NewInt(half))
	if err != nil {
		return d
	}
	return time.Duration(half + j.Int64())
}

// send posts the payload; it returns the receiver's status.
func (s *Sender) send(ctx context.Context, ep Endpoint, d Delivery) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, strings.NewReader(d.Payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.cfg.UserAgent)
	req.Header.Set("X-Webhook-Id", d.EventID)
	req.Header.Set("X-Webhook-Delivery", d.ID)
	open := func(v string) (string, error) {
		if v == "" || s.sealer == nil {
			return v, nil
		}
		return s.sealer.Open(v)
	}
	switch ep.Auth {
	case "basic":
		pw, err := open(ep.Password)
		if err != nil {
			return 0, errors.New("cannot open the endpoint's password")
		}
		req.SetBasicAuth(ep.Username, pw)
	case "bearer":
		tok, err := open(ep.Token)
		if err != nil {
			return 0, errors.New("cannot open the endpoint's token")
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if ep.Secret != "" {
		secret, err := open(ep.Secret)
		if err != nil {
			return 0, errors.New("cannot open the endpoint's secret")
		}
		req.Header.Set(SignatureHeader, Sign(secret, []byte(d.Payload)))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sink [512]byte
	for i := 0; i < 64; i++ { // read a little of the answer so the connection can be reused
		if _, err := resp.Body.Read(sink[:]); err != nil {
			break
		}
	}
	return resp.StatusCode, nil
}

// SignatureHeader carries "sha256=" and the hex HMAC-SHA-256 of the body with the endpoint's secret.
const SignatureHeader = "X-Webhook-Signature"

// Sign returns the signature header's value of body.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
