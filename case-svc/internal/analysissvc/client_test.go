package analysissvc

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/pkg/apperr"
)

var fast = Options{RetryMax: 3, RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}

// A job creation that fails twice with 503 is retried with the same Idempotency-Key and body.
func TestClient_RunAnalyzerRetriesWithIdempotencyKey(t *testing.T) {
	var calls atomic.Int32
	var mu sync.Mutex
	var keys, bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer secret-key" || r.URL.Path != "/api/analyzer/a1/run" {
			http.Error(w, `{"type":"AuthenticationError","message":"no"}`, 401)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		keys, bodies = append(keys, r.Header.Get("Idempotency-Key")), append(bodies, string(b))
		mu.Unlock()
		if calls.Add(1) <= 2 {
			w.WriteHeader(503)
			return
		}
		_, _ = w.Write([]byte(`{"id":"j1","status":"Waiting","analyzerId":"a1","analyzerName":"A","report":"Waiting"}`))
	}))
	defer srv.Close()
	c := New(Server{Name: "s1", URL: srv.URL, Key: "secret-key"}, fast, nil)
	j, err := c.RunAnalyzer(context.Background(), "a1", JobRequest{DataType: "ip", Data: "1.2.3.4", TLP: 2, PAP: 2}, "idem-1")
	if err != nil || j.ID != "j1" || j.Report != nil || j.Status != "Waiting" {
		t.Fatalf("job %+v err %v", j, err)
	}
	if len(keys) != 3 || keys[0] != "idem-1" || keys[2] != "idem-1" || bodies[0] != bodies[2] || !strings.Contains(bodies[0], `"data":"1.2.3.4"`) {
		t.Fatalf("attempts: keys %v bodies %v", keys, bodies)
	}
}

// A file is sent as multipart (_json + attachment), again in full on a retry.
func TestClient_RunAnalyzerFile(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Errorf("multipart: %v", err)
		}
		f, fh, err := r.FormFile("attachment")
		if err != nil || r.FormValue("_json") == "" {
			t.Errorf("parts: %v %q", err, r.FormValue("_json"))
			w.WriteHeader(400)
			return
		}
		b, _ := io.ReadAll(f)
		if string(b) != "file content" || fh.Filename != "x.bin" {
			t.Errorf("file %q %q", b, fh.Filename)
		}
		if calls.Add(1) == 1 {
			w.WriteHeader(502)
			return
		}
		_, _ = w.Write([]byte(`{"id":"j2","status":"Waiting"}`))
	}))
	defer srv.Close()
	c := New(Server{Name: "s1", URL: srv.URL, Key: "k"}, fast, nil)
	file := &File{Name: "x.bin", Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("file content")), nil }}
	j, err := c.RunAnalyzer(context.Background(), "a1", JobRequest{DataType: "file", File: file}, "k2")
	if err != nil || j.ID != "j2" || calls.Load() != 2 {
		t.Fatalf("job %+v err %v calls %d", j, err, calls.Load())
	}
}

func TestClient_ErrorsNameTheServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/analyzer/missing/run":
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"type":"NotFoundError","message":"analyzer missing not found"}`))
		case "/api/analyzer/limited/run":
			w.WriteHeader(429)
			_, _ = w.Write([]byte(`{"type":"RateLimitExceeded","message":"Rate limit of 1 per Day reached"}`))
		case "/api/analyzer/bad/run":
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"type":"BadRequest","message":"dataType not accepted"}`))
		default:
			w.WriteHeader(401)
		}
	}))
	defer srv.Close()
	c := New(Server{Name: "east", URL: srv.URL, Key: "k"}, fast, nil)
	for id, kind := range map[string]apperr.Kind{"missing": apperr.NotFound, "limited": apperr.RateLimited,
		"bad": apperr.BadRequest, "other": apperr.Unavailable} {
		_, err := c.RunAnalyzer(context.Background(), id, JobRequest{DataType: "ip", Data: "x"}, "")
		if apperr.KindOf(err) != kind || !strings.Contains(apperr.As(err).Message, "analysis server east") {
			t.Errorf("%s: %v (kind %v)", id, err, apperr.KindOf(err))
		}
	}
	down := New(Server{Name: "gone", URL: "http://127.0.0.1:1", Key: "k"}, fast, nil)
	_, err := down.Analyzers(context.Background())
	if apperr.KindOf(err) != apperr.Unavailable || !strings.Contains(apperr.As(err).Message, "analysis server gone is unreachable") {
		t.Fatalf("unreachable: %v", err)
	}
}

func TestClient_WaitReportAndDownload(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/waitreport"):
			if r.URL.Query().Get("atMost") != "2second" {
				t.Errorf("atMost %q", r.URL.Query().Get("atMost"))
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "j", "status": "Success", "report": map[string]any{
				"success": true, "full": map[string]any{"a": 1}, "summary": map[string]any{"taxonomies": []any{}},
				"artifacts": []any{map[string]any{"dataType": "file", "attachment": map[string]any{"id": "h1", "name": "n"}}}}})
		case r.URL.Path == "/api/datastore/h1":
			_, _ = w.Write([]byte("bytes"))
		}
	}))
	defer srv.Close()
	c := New(Server{Name: "s", URL: srv.URL, Key: "k"}, fast, nil)
	j, err := c.WaitReport(context.Background(), "j", 2*time.Second)
	if err != nil || !j.Finished() || j.Report == nil || !j.Report.Success || j.Report.Artifacts[0].Attachment.ID != "h1" {
		t.Fatalf("job %+v %v", j, err)
	}
	body, err := c.Download(context.Background(), "h1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(body)
	body.Close()
	if string(b) != "bytes" {
		t.Fatalf("download %q", b)
	}
}

func TestServer_Serves(t *testing.T) {
	if !(Server{}).Serves("x") || !(Server{Organisations: []string{"*"}}).Serves("x") ||
		(Server{Organisations: []string{"a"}}).Serves("x") || !(Server{Organisations: []string{"a", "x"}}).Serves("x") {
		t.Fatal("Serves")
	}
}
