package web

// Issue 15 (unauthenticated remote crash): the body limits, the JSON pre-scan and its memory estimate, the
// decoding budget, multipart streaming, the client address and the login throttle through CheckLogin.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/auth"
)

func TestScanJSON_Limits(t *testing.T) {
	lim := JSONLimits{Depth: 4, Array: 3, String: 5}.withDefaults()
	for _, tc := range []struct {
		doc  string
		want string // "" = accepted
	}{
		{`{"a":[1,2,3],"b":{"c":{"d":"12345"}}}`, ""},
		{`[[[["x"]]]]`, ""},
		{`[[[[[1]]]]]`, "nested deeper than 4"},
		{`{"a":{"b":{"c":{"d":{}}}}}`, "nested deeper than 4"},
		{`[1,2,3,4]`, "more than 3 elements"},
		{`{"a":[[],[],[],[]]}`, "more than 3 elements"},
		{`{"a":"123456"}`, "longer than 5"},
		{`{"123456":1}`, "longer than 5"},
		{`{"a":"1\"34"}`, ""}, // an escaped quote does not end the string (5 encoded bytes)
		{`{"a":"1\"345"}`, "longer than 5"},
		{`{"a":"1\\"}`, ""},
		// Malformed input is only scanned (the decoder refuses it): no panic, no hang.
		{`{"a":"unte`, ""},
		{`{"a":"\`, ""},
		{`]]]]]]`, ""},
		{`{{{{`, ""},
		{`nul`, ""},
	} {
		_, err := scanJSON([]byte(tc.doc), lim)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.doc, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error saying %q", tc.doc, err, tc.want)
		case tc.want != "" && apperr.KindOf(err) != apperr.BadRequest:
			t.Errorf("%s: kind %v, want BadRequest", tc.doc, apperr.KindOf(err))
		}
	}
}

// A search with 16M _in values (issue 15: 70 s and 5.3 GiB) is refused by the scan at its first array
// element past the limit, before anything is allocated.
func TestScanJSON_HugeArrayIsCheap(t *testing.T) {
	doc := []byte(`{"query":{"_in":{"_field":"data","_values":[` + strings.Repeat("0,", 16<<20) + `0]}}}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := scanJSON(doc, JSONLimits{}.withDefaults())
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "more than 100000 elements") {
		t.Fatalf("16M values: %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Fatalf("the scan allocated %d bytes", n)
	}
}

// The scan's estimate is at least what encoding/json allocates to decode a document into any (the way
// decodeObject does), for the shapes that cost the most per byte.
func TestScanJSON_EstimateCoversAllocations(t *testing.T) {
	rep := func(open, item, close string, n int) string {
		return open + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + close
	}
	var big strings.Builder
	big.WriteString("{")
	for i := range 20000 {
		if i > 0 {
			big.WriteString(",")
		}
		fmt.Fprintf(&big, `"k%06d":%d`, i, i)
	}
	big.WriteString("}")
	const n = 100000
	for name, doc := range map[string]string{
		"numbers":         rep(`{"a":[`, "0", "]}", n),
		"empty objects":   rep(`{"a":[`, "{}", "]}", n/3),
		"empty arrays":    rep(`{"a":[`, "[]", "]}", n/3),
		"1-member":        rep(`{"a":[`, `{"a":0}`, "]}", n/8),
		"8-member":        rep(`{"a":[`, `{"a":0,"b":0,"c":0,"d":0,"e":0,"f":0,"g":0,"h":0}`, "]}", n/50),
		"9-member":        rep(`{"a":[`, `{"a":0,"b":0,"c":0,"d":0,"e":0,"f":0,"g":0,"h":0,"i":0}`, "]}", n/56),
		"one big object":  big.String(),
		"empty strings":   rep(`{"a":[`, `""`, "]}", n/3),
		"literals":        rep(`{"a":[`, `true,null,false`, "]}", n/15),
		"nested arrays":   rep(`{"a":[`, `[0]`, "]}", n/4),
		"short strings":   rep(`{"a":[`, `"abcdefgh"`, "]}", n/11),
		"one long string": `{"a":"` + strings.Repeat("x", 1<<20) + `"}`,
		"deep":            `{"a":` + strings.Repeat(`[`, 60) + strings.Repeat(`]`, 60) + `}`,
	} {
		est, err := scanJSON([]byte(doc), JSONLimits{Decoded: 1 << 40, InFlight: 1 << 40}.withDefaults())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// TotalAlloc counts the whole process: another goroutine's allocations only add to a measure, so the
		// decode's own is the least of a few (a run counted 2 KB more than a 126-byte body's decode takes).
		alloc := int64(math.MaxInt64)
		for range 5 {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f := map[string]any{}
			if err := decodeObject([]byte(doc), f); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(f)
			alloc = min(alloc, int64(after.TotalAlloc-before.TotalAlloc))
		}
		t.Logf("%-16s %8d bytes: estimate %10d, allocated %10d (%.1fx the body)", name, len(doc), est, alloc,
			float64(alloc)/float64(len(doc)))
		if est < alloc {
			t.Errorf("%s: estimate %d < allocated %d", name, est, alloc)
		}
	}
}

func TestBudget(t *testing.T) {
	b := newBudget(10)
	ctx := context.Background()
	if err := b.acquire(ctx, 6); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 5) }()
	select {
	case err := <-got:
		t.Fatalf("acquired past the budget: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	b.release(6)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// A waiter whose context ends leaves the queue, and those behind it go on.
	cctx, cancel := context.WithCancel(ctx)
	big := make(chan error, 1)
	go func() { big <- b.acquire(cctx, 10) }()
	for {
		b.mu.Lock()
		n := len(b.waiters)
		b.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	small := make(chan error, 1)
	go func() { small <- b.acquire(ctx, 5) }()
	cancel()
	if err := <-big; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	if err := <-small; err != nil {
		t.Fatal(err)
	}
	b.release(5)
	b.release(5)
	if b.used != 0 || len(b.waiters) != 0 {
		t.Fatalf("used %d, waiters %d", b.used, len(b.waiters))
	}
}

// fakeAuth accepts the key "good" and the password "right".
type fakeAuth struct{ checks atomic.Int32 }

func (*fakeAuth) ByKey(_ context.Context, key string) (string, error) {
	if key == "good" {
		return "user", nil
	}
	return "", ErrAuthentication
}

func (f *fakeAuth) ByPassword(_ context.Context, login, password string) (string, error) {
	f.checks.Add(1)
	if password == "right" {
		return login, nil
	}
	return "", ErrAuthentication
}

func (*fakeAuth) BySession(context.Context, string) (string, int64, error) {
	return "", 0, ErrAuthentication
}

// limitServer serves New with small limits and a few routes, and counts the body bytes the handlers read.
type limitServer struct {
	srv    *httptest.Server
	read   atomic.Int64
	spools chan string // the temporary files of uploads
	auth   *fakeAuth
}

const (
	testBody   = 4 << 10
	testAnon   = 1 << 10
	testUpload = 16 << 10
)

func newLimitServer(t *testing.T) *limitServer {
	ls := &limitServer{spools: make(chan string, 100), auth: &fakeAuth{}}
	e := New(Options{Log: slog.New(slog.DiscardHandler), Limits: Limits{Body: testBody, Unauthenticated: testAnon,
		JSON: JSONLimits{Decoded: 64 << 10, InFlight: 1 << 20}}})
	fields := func(c echo.Context) error {
		f, err := Fields(c)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]int{"fields": len(f)})
	}
	authn := Authenticate[string](ls.auth, AuthConfig{})
	e.POST("/open", fields)
	e.POST("/auth", fields, authn)
	e.POST("/upload", func(c echo.Context) error {
		f, err := FormFile(c, "attachment")
		if err != nil {
			return err
		}
		if f == nil {
			return c.JSON(http.StatusOK, map[string]int64{"size": -1})
		}
		ls.spools <- f.path
		r, err := f.Open()
		if err != nil {
			return err
		}
		defer r.Close()
		n, _ := io.Copy(io.Discard, r)
		return c.JSON(http.StatusOK, map[string]int64{"size": n})
	}, authn, Upload(testUpload))
	ls.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &countingBody{r.Body, &ls.read}
		e.ServeHTTP(w, r)
	}))
	t.Cleanup(ls.srv.Close)
	return ls
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

var expectContinue = &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}

// hidden hides a body's length: the client sends it chunked.
type hidden struct{ io.Reader }

// sized is a body of a declared length.
type sized struct {
	io.Reader
	n int64
}

// post sends body and returns the status and error type; a transport error (the server closed the
// connection while the client was still sending) is status 0.
func (ls *limitServer) post(t *testing.T, path, ctype string, body io.Reader, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ls.srv.URL+path, body)
	hc := http.DefaultClient
	if s, ok := body.(sized); ok {
		// A large declared body waits for the server's go-ahead (as curl does): a refusal before reading then
		// reaches the client whatever the load.
		req.ContentLength = s.n
		req.Header.Set("Expect", "100-continue")
		hc = expectContinue
	}
	req.Header.Set("Content-Type", ctype)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var e struct{ Type, Message string }
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Type
}

// endless is a JSON object that never ends.
type endless struct{ started bool }

func (e *endless) Read(p []byte) (int, error) {
	if !e.started {
		e.started = true
		return copy(p, `{"junk":"`), nil
	}
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestLimits_UnauthenticatedBodies(t *testing.T) {
	ls := newLimitServer(t)
	small := `{"a":"` + strings.Repeat("x", testAnon-10) + `"}`
	if st, _ := ls.post(t, "/open", "application/json", strings.NewReader(small), ""); st != 200 {
		t.Fatalf("a body within the unauthenticated limit: %d", st)
	}
	over := `{"a":"` + strings.Repeat("x", testAnon) + `"}`
	for _, tc := range []struct {
		name    string
		body    func() io.Reader
		maxRead int64
	}{
		{"declared length over the limit", func() io.Reader { return strings.NewReader(over) }, 0},
		{"chunked", func() io.Reader { return hidden{strings.NewReader(over)} }, testAnon + 1},
		{"declared 64 MiB", func() io.Reader { return sized{io.LimitReader(&endless{}, 64<<20), 64 << 20} }, 0},
		{"endless, chunked", func() io.Reader { return hidden{&endless{}} }, testAnon + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls.read.Store(0)
			body := tc.body()
			st, typ := ls.post(t, "/open", "application/json", body, "")
			// st 0: the server closed the connection under a chunked body still being sent (no answer to check).
			_, chunked := body.(hidden)
			if (!chunked || st != 0) && (st != http.StatusRequestEntityTooLarge || typ != "BadRequest") {
				t.Errorf("status %d %s, want 413 BadRequest", st, typ)
			}
			if n := ls.read.Load(); n > tc.maxRead {
				t.Errorf("the server read %d bytes, want at most %d", n, tc.maxRead)
			}
		})
	}
	// A route behind authentication reads nothing of a request whose credentials are wrong or missing.
	for _, key := range []string{"", "bad"} {
		ls.read.Store(0)
		st, _ := ls.post(t, "/auth", "application/json", hidden{io.LimitReader(&endless{}, 8<<20)}, key)
		if st != http.StatusUnauthorized && st != 0 {
			t.Errorf("key %q: status %d, want 401", key, st)
		}
		if n := ls.read.Load(); n != 0 {
			t.Errorf("key %q: %d bytes read before authentication", key, n)
		}
	}
	// Authenticated: up to Body.
	mid := `{"a":"` + strings.Repeat("x", testBody-10) + `"}`
	if st, _ := ls.post(t, "/auth", "application/json", strings.NewReader(mid), "good"); st != 200 {
		t.Errorf("an authenticated body within Body: %d", st)
	}
	if st, _ := ls.post(t, "/open", "application/json", strings.NewReader(mid), ""); st != 413 {
		t.Errorf("the same body unauthenticated: %d, want 413", st)
	}
	if st, _ := ls.post(t, "/auth", "application/json", strings.NewReader(mid+strings.Repeat(" ", 20)), "good"); st != 413 {
		t.Errorf("an authenticated body over Body: %d, want 413", st)
	}
}

func TestLimits_JSON(t *testing.T) {
	ls := newLimitServer(t)
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"deep", `{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, 400},
		{"deep in a form value", "a=" + strings.Repeat("%5B", 100), 400},
		{"over the decoded estimate", `{"a":[` + strings.TrimSuffix(strings.Repeat("{},", 1300), ",") + `]}`, 413},
		{"too many form parameters", strings.Repeat("a=1&", 1000), 400},
	} {
		ctype := "application/json"
		if !strings.HasPrefix(tc.body, "{") {
			ctype = "application/x-www-form-urlencoded"
		}
		if st, _ := ls.post(t, "/auth", ctype, strings.NewReader(tc.body), "good"); st != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, st, tc.want)
		}
	}
}

func multipartOf(t *testing.T, fields map[string]string, file []byte, header string) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	if file != nil {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="attachment"; filename="f.bin"`)
		h.Set("Content-Type", "application/octet-stream")
		if header != "" {
			h.Set("X-Padding", header)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(file)
	}
	_ = mw.Close()
	return mw.FormDataContentType(), &buf
}

func TestLimits_Uploads(t *testing.T) {
	ls := newLimitServer(t)
	ct, body := multipartOf(t, map[string]string{"_json": `{"a":1}`}, bytes.Repeat([]byte("u"), testUpload), "")
	req, _ := http.NewRequest(http.MethodPost, ls.srv.URL+"/upload", body)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer good")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Size int64 }
	_ = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if resp.StatusCode != 200 || got.Size != testUpload {
		t.Fatalf("a file of the upload limit: %d, size %d", resp.StatusCode, got.Size)
	}
	if _, err := os.Stat(<-ls.spools); !os.IsNotExist(err) {
		t.Errorf("the spooled upload outlived its request: %v", err)
	}
	for _, tc := range []struct {
		name   string
		fields map[string]string
		file   []byte
		header string
		key    string
		want   int
	}{
		{"file over the limit", nil, bytes.Repeat([]byte("u"), testUpload+1), "", "good", 413},
		{"values over Body", map[string]string{"_json": `{"a":"` + strings.Repeat("x", testBody) + `"}`}, nil, "", "good", 413},
		{"part header over 16K", nil, []byte("x"), strings.Repeat("h", 17<<10), "good", 400},
		{"unauthenticated", nil, []byte("x"), "", "", 401},
	} {
		ct, body := multipartOf(t, tc.fields, tc.file, tc.header)
		if st, _ := ls.post(t, "/upload", ct, body, tc.key); st != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, st, tc.want)
		}
	}
	// More parts than allowed.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := range maxParts + 2 {
		_ = mw.WriteField(fmt.Sprint("f", i), "v")
	}
	_ = mw.Close()
	if st, _ := ls.post(t, "/upload", mw.FormDataContentType(), &buf, "good"); st != 400 {
		t.Errorf("%d parts: %d, want 400", maxParts+2, st)
	}
	// A JSON body on an upload route keeps the Body limit.
	js := `{"a":"` + strings.Repeat("x", testBody) + `"}`
	if st, _ := ls.post(t, "/upload", "application/json", strings.NewReader(js), "good"); st != 413 {
		t.Errorf("JSON over Body on an upload route: %d, want 413", st)
	}
}

func TestClientAddr(t *testing.T) {
	proxies, _ := ParseCIDRs([]string{"10.0.0.0/8"})
	for _, tc := range []struct{ peer, xff, want string }{
		{"1.2.3.4:5", "", "1.2.3.4"},
		{"1.2.3.4:5", "9.9.9.9", "1.2.3.4"}, // an untrusted peer's header is ignored
		{"10.0.0.1:5", "", "10.0.0.1"},
		{"10.0.0.1:5", "9.9.9.9", "9.9.9.9"},
		{"10.0.0.1:5", "6.6.6.6, 9.9.9.9, 10.0.0.2", "9.9.9.9"}, // the client wrote 6.6.6.6 itself
		{"10.0.0.1:5", "garbage, 9.9.9.9", "9.9.9.9"},
		{"10.0.0.1:5", "9.9.9.9, garbage", "10.0.0.1"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.peer
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := ClientAddr(r, proxies); got != tc.want {
			t.Errorf("peer %s, X-Forwarded-For %q: %s, want %s", tc.peer, tc.xff, got, tc.want)
		}
	}
}

// Regression (issue 15): 40 parallel wrong passwords for one login had 36 to 40 passwords checked (limit 5).
// Basic credentials go through the same throttle; a stranger elsewhere does not lock the login out.
func TestCheckLogin_ParallelAttempts(t *testing.T) {
	fa := &fakeAuth{}
	proxies, _ := ParseCIDRs([]string{"127.0.0.1"})
	cfg := AuthConfig{Basic: true, Throttle: auth.NewThrottle(5, 100, time.Minute, nil),
		Transport: SecureConfig{AllowInsecure: true, TrustedProxies: proxies}}
	e := New(Options{Log: slog.New(slog.DiscardHandler)})
	e.GET("/me", func(c echo.Context) error { return c.String(http.StatusOK, Caller[string](c)) }, Authenticate[string](fa, cfg))
	srv := httptest.NewServer(e)
	defer srv.Close()
	call := func(from, password string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/me", nil)
		req.SetBasicAuth("victim", password)
		req.Header.Set("X-Forwarded-For", from)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := call("203.0.113.9", "wrong")
			mu.Lock()
			statuses[st]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if n := fa.checks.Load(); n != 5 || statuses[401] != 5 || statuses[429] != 35 {
		t.Fatalf("%d passwords checked, statuses %v; want 5 checked, 5×401 and 35×429", n, statuses)
	}
	if st := call("198.51.100.7", "right"); st != 200 {
		t.Fatalf("the owner from another address: %d, want 200 (locked out by a stranger)", st)
	}
	if st := call("203.0.113.9", "right"); st != 429 {
		t.Fatalf("the guessing address with the right password: %d, want 429", st)
	}
}

// Basic credentials over plain HTTP follow the rule of the password endpoints.
func TestAuthenticate_BasicNeedsHTTPS(t *testing.T) {
	fa := &fakeAuth{}
	e := New(Options{Log: slog.New(slog.DiscardHandler)})
	e.GET("/me", func(c echo.Context) error { return c.NoContent(http.StatusOK) },
		Authenticate[string](fa, AuthConfig{Basic: true}))
	srv := httptest.NewServer(e)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/me", nil)
	req.SetBasicAuth("u", "right")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || fa.checks.Load() != 0 {
		t.Fatalf("basic over plain HTTP: %d, %d passwords checked; want 403 and none", resp.StatusCode, fa.checks.Load())
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"64K": 64 << 10, "1M": 1 << 20, "1MiB": 1 << 20, "2mb": 2 << 20, "1G": 1 << 30, "512": 512} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1M", "1X", "M", "99999999999G"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
