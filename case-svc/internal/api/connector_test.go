package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/analysissvc"
	"github.com/openir/platform/case-svc/internal/connector"
)

// analysisServer is a real analysis-svc process, built from this workspace and started on loopback, with an
// organization whose orgadmin key the connector uses and the built-in workers enabled.
type analysisServer struct {
	URL       string
	Key       string            // the orgadmin's key (what the connector is configured with)
	Analyzers map[string]string // name -> enabled id
	Responder map[string]string
	// Enable enables a definition (kind analyzer or responder) in the organization and returns its id.
	Enable func(kind, def string, conf map[string]any) string
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func analysisBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "analysis-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "analysis-svc")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/openir/platform/analysis-svc/cmd/analysis-svc").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build analysis-svc: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// startAnalysis starts analysis-svc on addr; env adds ANALYSIS_* settings (e.g. analyzer.paths).
func startAnalysis(t *testing.T, addr string, env ...string) *analysisServer {
	t.Helper()
	return startAnalysisOrg(t, addr, "soc", env...)
}

// startAnalysisOrg is startAnalysis with the connector's user in the organization org (worker ids are derived
// from the organization's name, so servers whose organizations are named differently give different ids).
func startAnalysisOrg(t *testing.T, addr, org string, env ...string) *analysisServer {
	t.Helper()
	const superKey = "analysis-superadmin-key-0123456789abcdef"
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, analysisBinary(t))
	cmd.Env = append(os.Environ(), "ANALYSIS_HTTP_ADDR="+addr, "ANALYSIS_DATABASE_PATH="+t.TempDir(),
		"ANALYSIS_BOOTSTRAP_LOGIN=root", "ANALYSIS_BOOTSTRAP_KEY="+superKey, "ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS=true")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				select {
				case listening <- line.Addr:
				default:
				}
			}
		}
	}()
	var base string
	select {
	case a := <-listening:
		base = "http://" + a
	case <-time.After(60 * time.Second):
		t.Fatal("analysis-svc did not start within 60 s")
	}
	call := func(method, path, key string, body any) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, step := range []struct {
		path string
		body any
	}{{"/api/organization", map[string]any{"name": org}},
		{"/api/user", map[string]any{"login": "connector", "organization": org, "roles": []string{"read", "analyze", "orgadmin"}}}} {
		if code, b := call("POST", step.path, superKey, step.body); code != 201 {
			t.Fatalf("%s: %d %s", step.path, code, b)
		}
	}
	code, key := call("POST", "/api/user/connector/key/renew", superKey, nil)
	if code != 200 {
		t.Fatalf("key: %d", code)
	}
	s := &analysisServer{URL: base, Key: string(key), Analyzers: map[string]string{}, Responder: map[string]string{}}
	enable := func(kind, def string, conf map[string]any) string {
		code, b := call("POST", "/api/organization/"+kind+"/"+def, s.Key, map[string]any{"configuration": conf})
		if code != 201 {
			t.Fatalf("enable %s: %d %s", def, code, b)
		}
		var w struct{ ID, Name string }
		_ = json.Unmarshal(b, &w)
		return w.ID
	}
	s.Enable = enable
	s.Analyzers["Echo"] = enable("analyzer", "Echo_1_0", map[string]any{})
	s.Analyzers["File_Info"] = enable("analyzer", "File_Info_1_0", map[string]any{"auto_extract_artifacts": true})
	s.Responder["Tagger"] = enable("responder", "Tagger_1_0", map[string]any{"tag": "seen-by-responder"})
	s.Responder["Task_Helper"] = enable("responder", "Task_Helper_1_0",
		map[string]any{"taskTitle": "Follow-up", "logMessage": "checked", "closeTask": true})
	return s
}

var fastTracker = connector.AnalysisConfig{LongPoll: 5 * time.Second, Scan: 100 * time.Millisecond,
	BackoffLo: 50 * time.Millisecond, BackoffHi: 300 * time.Millisecond}

func server(name string, a *analysisServer, url string) connector.AnalysisServer {
	if url == "" {
		url = a.URL
	}
	return analysissvc.Adapter{Client: analysissvc.New(analysissvc.Server{Name: name, URL: url, Key: a.Key, Timeout: 10 * time.Second},
		analysissvc.Options{RetryMax: 1, RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 50 * time.Millisecond}, nil)}
}

// eventually polls get until done says so (deadline 30 s).
func eventually(t *testing.T, what string, get func() obj, done func(obj) bool) obj {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		o := get()
		if done(o) {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done within 30 s; last %v", what, o)
		}
		time.Sleep(50 * time.Millisecond) // polling interval; the deadline bounds the wait
	}
}

func TestConnector_AnalyzersJobsAndResponders(t *testing.T) {
	as, as2 := startAnalysis(t, "127.0.0.1:0"), startAnalysis(t, "127.0.0.1:0")
	tm := newTeam(t, withServers(fastTracker, server("local", as, ""), server("second", as2, ""), server("down", as, "http://127.0.0.1:1")))
	cs := tm.analyst.newCase(t, map[string]any{"tlp": 1, "pap": 2})
	caseID := cs.Str(t, "id")
	ip := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"203.0.113.5"}})[0]
	content := "contact http://bad.example.net/x from 198.51.100.77\n"
	file := tm.analyst.multipart(t, http.MethodPost, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "file"}, nil,
		part{field: "attachment", filename: "notes.txt", contentType: "text/plain", content: []byte(content)}).Want(t, http.StatusCreated).List(t)[0]

	t.Run("listing merges servers and leaves a dead one out", func(t *testing.T) {
		r := tm.analyst.Call(t, http.MethodGet, "/api/connector/cortex/analyzer", nil).Want(t, http.StatusOK)
		names := map[string]bool{}
		for _, w := range r.List(t) {
			names[w.Str(t, "name")] = true
			if ids := w.Strs(t, "cortexIds"); len(ids) != 2 || ids[0] != "local" || ids[1] != "second" {
				t.Fatalf("servers of %v", w)
			}
		}
		if !names["Echo"] || !names["File_Info"] || !strings.Contains(r.Header.Get("X-Analysis-Warnings"), "down") {
			t.Fatalf("analyzers %v warnings %q", names, r.Header.Get("X-Analysis-Warnings"))
		}
		if l := tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/analyzer/type/file", nil).Want(t, http.StatusOK).List(t); len(l) != 2 {
			t.Fatalf("file analyzers %v", l) // File_Info and Echo
		}
	})

	t.Run("analyzer job on a value", func(t *testing.T) {
		j := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
			map[string]any{"analysisId": "local", "artifactId": ip.Str(t, "id"), "analyzerId": as.Analyzers["Echo"]}).
			Want(t, http.StatusCreated).Object(t)
		if j.Str(t, "analysisId") != "local" || j.Str(t, "analysisJobId") == "" || j.Str(t, "analyzerName") != "Echo" {
			t.Fatalf("job %v", j)
		}
		done := eventually(t, "echo job", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
		if rep := done.Obj(t, "report"); rep["success"] != true || rep["full"] == nil {
			t.Fatalf("report %v", rep)
		}
		o := tm.analyst.Call(t, http.MethodGet, "/api/case/artifact/"+ip.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		if _, ok := o.Obj(t, "reports")["Echo"]; !ok {
			t.Fatalf("observable reports %v", o["reports"])
		}
		jobs := tm.analyst.Call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []any{
			map[string]any{"_name": "getObservable", "idOrName": ip.Str(t, "id")}, map[string]any{"_name": "jobs"},
			map[string]any{"_name": "sort", "_fields": []any{map[string]any{"startDate": "desc"}}},
			map[string]any{"_name": "page", "from": 0, "to": 10}}}).Want(t, http.StatusOK).List(t)
		if len(jobs) != 1 || jobs[0].Str(t, "id") != j.Str(t, "id") {
			t.Fatalf("query jobs %v", jobs)
		}
	})

	t.Run("the second server runs its own job", func(t *testing.T) {
		j := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
			map[string]any{"analysisId": "second", "artifactId": ip.Str(t, "id"), "analyzerId": as2.Analyzers["Echo"]}).
			Want(t, http.StatusCreated).Object(t)
		done := eventually(t, "second server's job", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
		if done.Str(t, "analysisId") != "second" {
			t.Fatalf("job %v", done)
		}
	})

	t.Run("file job imports artifacts as observables", func(t *testing.T) {
		j := tm.analyst.Call(t, http.MethodPost, "/api/connector/cortex/job",
			map[string]any{"cortexId": "local", "artifactId": file.Str(t, "id"), "analyzerId": as.Analyzers["File_Info"]}).
			Want(t, http.StatusCreated).Object(t)
		eventually(t, "file job", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
		obs := tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID+"/artifact?range=all", nil).Want(t, http.StatusOK).List(t)
		found := map[string][]string{}
		for _, o := range obs {
			if d, ok := o["data"].(string); ok {
				found[d] = o.Strs(t, "tags")
			}
		}
		if tags, ok := found["198.51.100.77"]; !ok || !contains(tags, "src:File_Info") {
			t.Fatalf("observables %v", found)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
			map[string]any{"analysisId": "nope", "artifactId": ip.Str(t, "id"), "analyzerId": "x"}).WantError(t, http.StatusBadRequest, "BadRequest")
		tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
			map[string]any{"analysisId": "local", "artifactId": ip.Str(t, "id"), "analyzerId": "unknown"}).WantError(t, http.StatusNotFound, "NotFoundError")
		tm.readOnly.Call(t, http.MethodPost, "/api/connector/analysis/job",
			map[string]any{"analysisId": "local", "artifactId": ip.Str(t, "id"), "analyzerId": as.Analyzers["Echo"]}).WantError(t, http.StatusForbidden, "AuthorizationError")
		tm.other.Call(t, http.MethodPost, "/api/connector/analysis/job",
			map[string]any{"analysisId": "local", "artifactId": ip.Str(t, "id"), "analyzerId": as.Analyzers["Echo"]}).WantError(t, http.StatusNotFound, "NotFoundError")
		al := tm.analyst.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "r1",
			"title": "a", "description": "d", "artifacts": []any{map[string]any{"dataType": "ip", "data": "192.0.2.9"}}}).Want(t, http.StatusCreated).Object(t)
		aobs := tm.analyst.Call(t, http.MethodGet, "/api/alert/"+al.Str(t, "id")+"/artifact", nil).Want(t, http.StatusOK).List(t)
		tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
			map[string]any{"analysisId": "local", "artifactId": aobs[0].Str(t, "id"), "analyzerId": as.Analyzers["Echo"]}).WantError(t, http.StatusBadRequest, "BadRequest")
		tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/action",
			map[string]any{"responderId": as.Responder["Tagger"], "objectType": "case_task", "objectId": "~404"}).WantError(t, http.StatusNotFound, "NotFoundError")
		msg := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/action",
			map[string]any{"responderId": as.Responder["Tagger"], "objectType": "case_task_log", "objectId": "~404"}).WantError(t, http.StatusNotFound, "NotFoundError")
		if msg != "Log not found" {
			t.Fatalf("message %q", msg)
		}
	})

	t.Run("responders apply their operations", func(t *testing.T) {
		task := tm.analyst.Call(t, http.MethodPost, "/api/case/"+caseID+"/task", map[string]any{"title": "Investigate"}).
			Want(t, http.StatusCreated).Object(t)
		act := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/action", map[string]any{
			"responderId": as.Responder["Task_Helper"], "objectType": "case_task", "objectId": task.Str(t, "id")}).
			Want(t, http.StatusCreated).Object(t)
		if act.Str(t, "objectType") != "Task" || act.Str(t, "status") != "Waiting" || act.Str(t, "analysisId") != "local" {
			t.Fatalf("action %v", act)
		}
		done := eventually(t, "responder", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/action/"+act.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
		var ops []map[string]any
		if err := json.Unmarshal([]byte(done.Str(t, "operations")), &ops); err != nil || len(ops) == 0 {
			t.Fatalf("operations %q", done["operations"])
		}
		for _, op := range ops {
			if op["status"] != "Success" {
				t.Fatalf("operation %v", op)
			}
		}
		tasks := tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID+"/task?range=all", nil).Want(t, http.StatusOK).List(t)
		titles := map[string]string{}
		for _, x := range tasks {
			titles[x.Str(t, "title")] = x.Str(t, "status")
		}
		if _, ok := titles["Follow-up"]; !ok || titles["Investigate"] != "Completed" {
			t.Fatalf("tasks after the responder: %v", titles)
		}
		tag := tm.analyst.Call(t, http.MethodPost, "/api/connector/cortex/action", map[string]any{
			"responderId": as.Responder["Tagger"], "objectType": "case", "objectId": caseID, "analysisId": "local"}).
			Want(t, http.StatusCreated).Object(t)
		eventually(t, "tagger", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/action/"+tag.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
		got := tm.analyst.Call(t, http.MethodGet, "/api/case/"+caseID, nil).Want(t, http.StatusOK).Object(t)
		if !contains(got.Strs(t, "tags"), "seen-by-responder") {
			t.Fatalf("case tags %v", got["tags"])
		}
		tm.readOnly.Call(t, http.MethodPost, "/api/connector/analysis/action", map[string]any{
			"responderId": as.Responder["Tagger"], "objectType": "case", "objectId": caseID}).WantError(t, http.StatusForbidden, "AuthorizationError")
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// faultProxy stands between the connector and a real analysis server: it can refuse every call (the server
// is down), refuse only reads (the server died after accepting a job), or answer 503 to the first job
// creations after forwarding them (the reply was lost).
type faultProxy struct {
	target  string
	mu      sync.Mutex
	down    bool
	reads   bool // refuse GETs only
	fail    int  // how many POSTs still get a 503 after being forwarded
	posts   int
	refused int // calls dropped
	srv     *httptest.Server
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	p := &faultProxy{target: target}
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		down := p.down || (p.reads && r.Method == http.MethodGet)
		failing := r.Method == http.MethodPost && p.fail > 0
		if failing {
			p.fail--
		}
		if r.Method == http.MethodPost {
			p.posts++
		}
		if down {
			p.refused++
		}
		p.mu.Unlock()
		if down { // drop the connection, as a dead server would
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		if failing {
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *faultProxy) set(f func(p *faultProxy)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (as *analysisServer) jobCount(t *testing.T) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, as.URL+"/api/job/_search", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+as.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var n int
	fmt.Sscan(resp.Header.Get("X-Total"), &n)
	return n
}

// Faults between case-svc and an analysis server: a creation whose reply is lost twice makes one job; a job
// requested while its server is down is accepted Waiting with a message naming the server and submitted once
// when the server is back; a server that dies while a job runs and comes back lets the job complete; another
// server keeps working meanwhile.
func TestConnector_Faults(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	p := newFaultProxy(t, as.URL)
	flaky := analysissvc.Adapter{Client: analysissvc.New(analysissvc.Server{Name: "flaky", URL: p.srv.URL, Key: as.Key, Timeout: 10 * time.Second},
		analysissvc.Options{RetryMax: 3, RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 50 * time.Millisecond}, nil)}
	tm := newTeam(t, withServers(fastTracker, flaky, server("steady", as, "")))
	cs := tm.analyst.newCase(t, nil)
	ob := tm.analyst.observables(t, "/api/case/"+cs.Str(t, "id")+"/artifact", map[string]any{"dataType": "domain", "data": []string{"example.org"}})[0]
	run := func(server string) *resp {
		return tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
			map[string]any{"analysisId": server, "artifactId": ob.Str(t, "id"), "analyzerId": as.Analyzers["Echo"]})
	}

	t.Run("503 twice then 200 makes one job", func(t *testing.T) {
		before := as.jobCount(t)
		p.set(func(p *faultProxy) { p.fail, p.posts = 2, 0 })
		j := run("flaky").Want(t, http.StatusCreated).Object(t)
		if p.posts != 3 {
			t.Fatalf("posts %d, want 3 (two lost replies, then one)", p.posts)
		}
		if after := as.jobCount(t); after != before+1 {
			t.Fatalf("analysis server jobs %d -> %d, want one more", before, after)
		}
		eventually(t, "job", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
	})

	t.Run("down at creation: accepted Waiting, submitted once when the server is back", func(t *testing.T) {
		// Another observable, so that the analysis server's cache cannot answer for it.
		ob := tm.analyst.observables(t, "/api/case/"+cs.Str(t, "id")+"/artifact", map[string]any{"dataType": "domain", "data": []string{"down.example.org"}})[0]
		jobsOf := func() int {
			return len(tm.analyst.Call(t, http.MethodPost, "/api/v1/query", map[string]any{"query": []any{
				map[string]any{"_name": "getObservable", "idOrName": ob.Str(t, "id")}, map[string]any{"_name": "jobs"}}}).Want(t, http.StatusOK).List(t))
		}
		before, remoteBefore := jobsOf(), as.jobCount(t)
		p.set(func(p *faultProxy) { p.down, p.refused = true, 0 })
		j := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
			map[string]any{"analysisId": "flaky", "artifactId": ob.Str(t, "id"), "analyzerId": as.Analyzers["Echo"]}).Want(t, http.StatusCreated).Object(t)
		if j["status"] != "Waiting" || !strings.Contains(fmt.Sprint(j["message"]), "analysis server flaky is unreachable") {
			t.Fatalf("job %v: want Waiting with a message naming the server", j)
		}
		if after := jobsOf(); after != before+1 {
			t.Fatalf("job records %d -> %d, want one more", before, after)
		}
		got := tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		if got["status"] != "Waiting" || got["message"] != j["message"] {
			t.Fatalf("stored job %v", got)
		}
		// The tracker keeps trying while the server is down (the proxy counts the refused calls), then submits it.
		waitFor(t, "the tracker's retries", func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.refused >= 3
		})
		p.set(func(p *faultProxy) { p.down = false })
		done := eventually(t, "the job after the server is back", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
		if _, ok := done["message"]; ok || done["analysisJobId"] == "" {
			t.Fatalf("finished job %v: want the server's job id and no message", done)
		}
		if after := as.jobCount(t); after != remoteBefore+1 {
			t.Fatalf("analysis server jobs %d -> %d, want one more", remoteBefore, after)
		}
	})

	t.Run("dies while the job runs, comes back: the job completes", func(t *testing.T) {
		p.set(func(p *faultProxy) { p.reads = true })
		j := run("flaky").Want(t, http.StatusCreated).Object(t)
		other := run("steady").Want(t, http.StatusCreated).Object(t)
		eventually(t, "the steady server's job", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+other.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
		if st := tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)["status"]; st == "Success" {
			t.Fatal("the job completed while its server could not be read")
		}
		p.set(func(p *faultProxy) { p.reads = false })
		eventually(t, "the flaky server's job after it is back", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
	})
}

// waitFor polls cond until it holds (deadline 30 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done within 30 s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval; the deadline bounds the wait
	}
}

// analysis.give_up counts from when the server stopped answering, not from submission: a job submitted long
// ago whose server has just gone down keeps being retried; it fails once the outage itself lasts GiveUp,
// with a message naming the server. A responder action requested while the server is down is accepted too.
func TestConnector_GiveUpCountsFromUnreachability(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	p := newFaultProxy(t, as.URL)
	var offset atomic.Int64 // the connector's clock runs ahead of real time by this much
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	cfg := fastTracker
	cfg.GiveUp = time.Hour
	flaky := analysissvc.Adapter{Client: analysissvc.New(analysissvc.Server{Name: "flaky", URL: p.srv.URL, Key: as.Key, Timeout: 10 * time.Second},
		analysissvc.Options{RetryMax: 1, RetryWaitMin: 10 * time.Millisecond, RetryWaitMax: 50 * time.Millisecond}, nil)}
	tm := newTeam(t, withoutTracker(), withConnectorClock(clock), withServers(cfg, flaky))
	cs := tm.analyst.newCase(t, nil)
	ob := tm.analyst.observables(t, "/api/case/"+cs.Str(t, "id")+"/artifact", map[string]any{"dataType": "domain", "data": []string{"example.net"}})[0]
	j := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
		map[string]any{"analysisId": "flaky", "artifactId": ob.Str(t, "id"), "analyzerId": as.Analyzers["Echo"]}).
		Want(t, http.StatusCreated).Object(t)
	if j["analysisJobId"] == "" {
		t.Fatalf("job %v was not submitted", j)
	}
	// Two hours after the submission (twice GiveUp), the server stops answering.
	offset.Add(int64(2 * time.Hour))
	p.set(func(p *faultProxy) { p.down, p.refused = true, 0 })
	// A responder action asked for now is accepted and waits too.
	act := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/action", map[string]any{"analysisId": "flaky",
		"responderId": as.Responder["Tagger"], "objectType": "case", "objectId": cs.Str(t, "id")}).Want(t, http.StatusCreated).Object(t)
	if act["status"] != "Waiting" || !strings.Contains(fmt.Sprint(act["message"]), "flaky") {
		t.Fatalf("action %v: want Waiting with a message naming the server", act)
	}
	tm.startTracker()
	waitFor(t, "the tracker's retries", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.refused >= 6
	})
	get := func() obj {
		return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+j.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
	}
	if st := get()["status"]; st == "Failure" || st == "Success" {
		t.Fatalf("the job ended (%v) though its server has been down for less than GiveUp", st)
	}
	// The outage itself now lasts longer than GiveUp: the job and the action fail, naming the server.
	offset.Add(int64(time.Hour + time.Minute))
	failed := eventually(t, "the job after GiveUp", get, func(o obj) bool { return o["status"] == "Failure" })
	msg := fmt.Sprint(failed["report"].(map[string]any)["errorMessage"])
	if !strings.Contains(msg, "flaky") || !strings.Contains(msg, "gave up after 1h0m0s") {
		t.Fatalf("errorMessage %q", msg)
	}
	eventually(t, "the action after GiveUp", func() obj {
		return tm.analyst.Call(t, http.MethodGet, "/api/connector/analysis/action/"+act.Str(t, "id"), nil).Want(t, http.StatusOK).Object(t)
	}, func(o obj) bool { return o["status"] == "Failure" })
}

// Jobs pending when case-svc stops complete after it starts again: the tracker works from the database.
func TestConnector_PendingJobsSurviveARestart(t *testing.T) {
	as := startAnalysis(t, "127.0.0.1:0")
	tm := newTeam(t, withoutTracker(), withServers(fastTracker, server("local", as, "")))
	cs := tm.analyst.newCase(t, nil)
	ob := tm.analyst.observables(t, "/api/case/"+cs.Str(t, "id")+"/artifact", map[string]any{"dataType": "domain", "data": []string{"example.com"}})[0]
	var ids []string
	for range 3 {
		j := tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job",
			map[string]any{"analysisId": "local", "artifactId": ob.Str(t, "id"), "analyzerId": as.Analyzers["Echo"]}).
			Want(t, http.StatusCreated).Object(t)
		ids = append(ids, j.Str(t, "id"))
	}
	for _, id := range ids {
		if st := tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+id, nil).Want(t, http.StatusOK).Object(t)["status"]; st == "Success" {
			t.Fatalf("job %s imported without a tracker", id)
		}
	}
	tm.startTracker()
	for _, id := range ids {
		eventually(t, "job after restart", func() obj {
			return tm.analyst.Call(t, http.MethodGet, "/api/connector/job/"+id, nil).Want(t, http.StatusOK).Object(t)
		}, func(o obj) bool { return o["status"] == "Success" })
	}
}
