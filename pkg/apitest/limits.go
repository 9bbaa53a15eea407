package apitest

import (
	"bytes"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/pkg/web"
)

// CountingServer serves h and counts the body bytes the service reads.
func CountingServer(t testing.TB, h http.Handler) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &countingBody{r.Body, &n}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	k, err := c.ReadCloser.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// Generated is a body of N bytes made on the fly (nothing held in the test's memory): Head, then Fill
// repeated.
type Generated struct {
	Head, Fill string
	N, off     int64
}

func (g *Generated) Read(p []byte) (int, error) {
	if g.off >= g.N {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && g.off < g.N {
		var c byte
		if g.off < int64(len(g.Head)) {
			c = g.Head[g.off]
		} else {
			c = g.Fill[(g.off-int64(len(g.Head)))%int64(len(g.Fill))]
		}
		p[k] = c
		k++
		g.off++
	}
	return k, nil
}

// Post sends a request of length bytes (-1: chunked) and returns its status (0 with the error when the
// transport failed: the server may close the connection while an over-limit body is still being sent) and
// its body.
func Post(hc *http.Client, url, ctype string, body io.Reader, length int64, hdr http.Header) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		return 0, "", err
	}
	req.ContentLength = length
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}

// Bearer is the Authorization header of a key.
func Bearer(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

// ExpectContinue sends bodies only once the server asks for them (Expect: 100-continue, as curl does for
// large bodies): a refusal before reading then reaches the client whatever the load, since nothing is left
// unsent when the server closes the connection.
var ExpectContinue = &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}

// MultipartFile is a multipart body with a `_json` part holding js and a file of size bytes, generated
// while it is sent: its content type, and a function that gives a fresh body and its length.
func MultipartFile(js string, size int64) (string, func() (io.Reader, int64)) {
	var head, tail bytes.Buffer
	mw := multipart.NewWriter(&head)
	_ = mw.WriteField("_json", js)
	_, _ = mw.CreateFormFile("attachment", "max.bin")
	at := head.Len()
	_ = mw.Close()
	tail.Write(head.Bytes()[at:])
	head.Truncate(at)
	return mw.FormDataContentType(), func() (io.Reader, int64) {
		return io.MultiReader(bytes.NewReader(head.Bytes()), &Generated{Fill: "m", N: size}, bytes.NewReader(tail.Bytes())),
			int64(head.Len()) + size + int64(tail.Len())
	}
}

// LocalhostOnly is a trusted-proxy list holding the test server's peer address.
func LocalhostOnly(t testing.TB) []*net.IPNet {
	t.Helper()
	n, err := web.ParseCIDRs([]string{"127.0.0.1/32", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// OversizeLoginIsNotRead sends 64 MiB JSON bodies without credentials to each of paths (the login routes),
// at once, declared (with Expect: 100-continue) and chunked. A declared one must be a 413 in the error shape
// without a byte read; a chunked one read no further than the unauthenticated limit (64 KiB) and answered
// 413, unless the client was still sending when the server closed the connection.
func OversizeLoginIsNotRead(t *testing.T, h http.Handler, paths []string) {
	t.Helper()
	srv, read := CountingServer(t, h)
	var wg sync.WaitGroup
	for i, path := range paths {
		for _, chunked := range []bool{false, true} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				length := int64(64 << 20)
				hdr := http.Header{"Expect": {"100-continue"}}
				if chunked {
					length, hdr = -1, nil
				}
				st, body, err := Post(ExpectContinue, srv.URL+path, "application/json",
					&Generated{Head: `{"junk":[`, Fill: "0,", N: 64 << 20}, length, hdr)
				if chunked && err != nil {
					return // the connection was closed under a body still being sent
				}
				if err != nil || st != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"type":"BadRequest"`) {
					t.Errorf("%d: 64 MiB to %s (length %d): %d %s %v", i, path, length, st, body, err)
				}
			}()
		}
	}
	wg.Wait()
	if n := read.Load(); n > int64(len(paths))*(64<<10+1) {
		t.Errorf("the service read %d bytes of %d refused bodies, want at most %d × 64 KiB", n, 2*len(paths), len(paths))
	}
}

// LimitedService is a service built with the request limits given, for the tests of the body limit: its
// handler and a key of a user who may search.
type LimitedService func(t *testing.T, limits web.Limits) (h http.Handler, key string)

// SearchWith16MValues sends, to each path of bodies, the body's head followed by 16M values: under the
// default limits a 413 before reading it; with http.body_limit raised so that it is read, a 400 from the JSON
// scan (array length), not gigabytes. With maxAlloc > 0 the raised request allocates less than that (the
// test must not run in parallel with others).
func SearchWith16MValues(t *testing.T, build LimitedService, bodies map[string]string, maxAlloc uint64) {
	const values = 16 << 20
	t.Run("default limits", func(t *testing.T) {
		h, key := build(t, web.Limits{})
		srv, read := CountingServer(t, h)
		for path, head := range bodies {
			b := &Generated{Head: head, Fill: "0,", N: int64(len(head)) + 2*values}
			hdr := Bearer(key)
			hdr.Set("Expect", "100-continue")
			st, msg, err := Post(ExpectContinue, srv.URL+path, "application/json", b, b.N, hdr)
			if err != nil || st != http.StatusRequestEntityTooLarge {
				t.Errorf("%s: %d %s %v, want 413", path, st, msg, err)
			}
		}
		if n := read.Load(); n != 0 {
			t.Errorf("read %d bytes of bodies declared over the limit", n)
		}
	})
	t.Run("body limit raised", func(t *testing.T) {
		h, key := build(t, web.Limits{Body: 64 << 20})
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		for path, head := range bodies {
			b := &Generated{Head: head, Fill: "0,", N: int64(len(head)) + 2*values}
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			st, msg, err := Post(srv.Client(), srv.URL+path, "application/json", b, b.N, Bearer(key))
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if err != nil || st != http.StatusBadRequest || !strings.Contains(msg, "more than 100000 elements") {
				t.Errorf("%s: %d %s %v, want 400 naming the array limit", path, st, msg, err)
			}
			// The body itself (32 MiB, read whole) and nothing like the 40x of a decode.
			if n := after.TotalAlloc - before.TotalAlloc; maxAlloc > 0 && n > maxAlloc {
				t.Errorf("%s: the request allocated %d MiB", path, n>>20)
			}
		}
	})
}

// ParallelWrongPasswordsCheckAtMostTheLimit sends 40 wrong passwords for login at once to the login route at
// url (a service whose throttle allows 5 attempts per login and address, behind a trusted proxy): 5 must be
// checked (401) and 35 refused (429); the owner still logs in from another address, and the guessing address
// stays refused with the right password.
func ParallelWrongPasswordsCheckAtMostTheLimit(t *testing.T, url, login, password string) {
	t.Helper()
	try := func(from, pw string) int {
		st, _, err := Post(http.DefaultClient, url, "application/json",
			strings.NewReader(`{"user":"`+login+`","password":"`+pw+`"}`), -1, http.Header{"X-Forwarded-For": {from}})
		if err != nil {
			t.Error(err)
		}
		return st
	}
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := try("203.0.113.9", "wrong-password")
			mu.Lock()
			statuses[st]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if statuses[http.StatusUnauthorized] != 5 || statuses[http.StatusTooManyRequests] != 35 {
		t.Fatalf("40 parallel wrong passwords: %v, want 5×401 (checked) and 35×429", statuses)
	}
	if st := try("198.51.100.7", password); st != http.StatusOK {
		t.Errorf("the owner from another address: %d, want 200", st)
	}
	if st := try("203.0.113.9", password); st != http.StatusTooManyRequests {
		t.Errorf("the guessing address, right password: %d, want 429", st)
	}
}
