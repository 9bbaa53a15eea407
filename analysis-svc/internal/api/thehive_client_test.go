package api_test

// TheHive 4.1.24's Cortex client (TheHive-Project/TheHive: cortex/client/.../CortexClient.scala, the
// org.thp.client BaseClient, and the models of cortex/dto/v0: OutputWorker, OutputJob, OutputReport,
// OutputArtifact, SearchQuery, InputArtifact, InputAction) played against analysis-svc: each call is the
// request the client sends (Play WS: Bearer key, compact JSON, multipart with the file part `data` before
// `_json`), and each answer is read the way its Reads read it: a field the Reads requires and does not find,
// or finds with another type, fails the call in TheHive (and a status check or a job poll fails with it).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"
)

// hiveCall sends one request as TheHive's WS client does.
func hiveCall(t *testing.T, c *client, method, path, jsonBody string) *resp {
	t.Helper()
	hdr := http.Header{"User-Agent": {"AHC/2.1"}, "Accept": {"*/*"}}
	if jsonBody == "" {
		return c.Send(t, method, path, "", nil, hdr)
	}
	return c.Send(t, method, path, "application/json", strings.NewReader(jsonBody), hdr)
}

// hiveString requires a string field (Play's validate[String]).
func hiveString(t *testing.T, what string, m map[string]any, k string) string {
	t.Helper()
	s, ok := m[k].(string)
	if !ok {
		t.Errorf("%s: %q is not a string (TheHive's Reads fails): %v", what, k, m)
	}
	return s
}

// hiveWorker reads an OutputWorker: id, name, version, description (strings), dataTypeList (optional
// list of strings), maxTlp and maxPap (optional numbers, 3 when absent).
func hiveWorker(t *testing.T, m map[string]any) {
	t.Helper()
	for _, k := range []string{"id", "name", "version", "description"} {
		hiveString(t, "worker", m, k)
	}
	if v, ok := m["dataTypeList"]; ok && v != nil {
		l, ok := v.([]any)
		for _, x := range l {
			if _, s := x.(string); !s {
				ok = false
			}
		}
		if !ok {
			t.Errorf("worker: dataTypeList is not a list of strings: %v", m)
		}
	}
	for _, k := range []string{"maxTlp", "maxPap"} {
		if v, ok := m[k]; ok && v != nil {
			if _, n := v.(float64); !n {
				t.Errorf("worker: %s is not a number: %v", k, m)
			}
		}
	}
}

func hiveWorkers(t *testing.T, r *resp) []map[string]any {
	t.Helper()
	l := plainMaps(r.Want(t, http.StatusOK).List(t))
	for _, m := range l {
		hiveWorker(t, m)
	}
	return l
}

var hiveJobStatus = []string{"InProgress", "Success", "Failure", "Waiting", "Deleted"}

// hiveJob reads an OutputJob and its OutputReport; it returns the job.
func hiveJob(t *testing.T, r *resp) map[string]any {
	t.Helper()
	if r.Status != http.StatusOK && r.Status != http.StatusCreated {
		t.Fatalf("%s %s: status %d; body %s", r.Method, r.Path, r.Status, r.Body)
	}
	m := r.Object(t)
	hiveString(t, "job", m, "id")
	if _, ok := m["workerId"].(string); !ok {
		hiveString(t, "job", m, "analyzerId")
	}
	if _, ok := m["date"].(float64); !ok { // Reads[Date]: epoch milliseconds
		t.Errorf("job: date is not a number: %v", m)
	}
	for _, k := range []string{"startDate", "endDate"} {
		if v, ok := m[k]; ok && v != nil {
			if _, n := v.(float64); !n {
				t.Errorf("job: %s is not a number: %v", k, m)
			}
		}
	}
	if st := hiveString(t, "job", m, "status"); !slices.Contains(hiveJobStatus, st) {
		t.Errorf("job: status %q is not one TheHive knows", st)
	}
	hiveString(t, "job", m, "organization")
	hiveString(t, "job", m, "dataType")
	if ty := hiveString(t, "job", m, "type"); ty != "analyzer" && ty != "responder" {
		t.Errorf("job: type %q", ty)
	}
	if a, ok := m["attachment"]; ok {
		if _, o := a.(map[string]any); !o {
			t.Errorf("job: attachment is not an object: %v", m)
		}
	}
	if rep, ok := m["report"].(map[string]any); ok {
		hiveReport(t, rep)
	}
	return m
}

// hiveReport reads an OutputReport as TheHive does (asOpt everywhere, so a wrong shape is silently lost:
// the test requires the shapes instead): summary.taxonomies, full, success, artifacts (each needs dataType,
// tlp and tags), operations.
func hiveReport(t *testing.T, rep map[string]any) {
	t.Helper()
	if rep["success"] != true {
		if _, ok := rep["errorMessage"].(string); !ok {
			t.Errorf("failed report without errorMessage: %v", rep)
		}
		return
	}
	sum, ok := rep["summary"].(map[string]any)
	if !ok {
		t.Errorf("report: summary is not an object: %v", rep)
	}
	tax, ok := sum["taxonomies"].([]any)
	if _, present := sum["taxonomies"]; present && !ok {
		t.Errorf("report: summary.taxonomies is not a list: %v", rep)
	}
	for _, x := range tax {
		m, _ := x.(map[string]any)
		for _, k := range []string{"level", "namespace", "predicate"} {
			hiveString(t, "taxonomy", m, k)
		}
		if _, ok := m["value"]; !ok {
			t.Errorf("taxonomy without value: %v", m)
		}
	}
	if _, ok := rep["full"].(map[string]any); !ok {
		t.Errorf("report: full is not an object: %v", rep)
	}
	arts, ok := rep["artifacts"].([]any)
	if !ok {
		t.Errorf("report: artifacts is not a list: %v", rep)
	}
	for _, x := range arts {
		a, _ := x.(map[string]any)
		hiveString(t, "artifact", a, "dataType")
		if _, ok := a["tlp"].(float64); !ok {
			t.Errorf("artifact: tlp is not a number (TheHive drops every artifact): %v", a)
		}
		if _, ok := a["tags"].([]any); !ok {
			t.Errorf("artifact: tags is not a list (TheHive drops every artifact): %v", a)
		}
	}
	if _, ok := rep["operations"].([]any); !ok {
		t.Errorf("report: operations is not a list: %v", rep)
	}
}

// hiveWait polls getReport(jobId, 1.second) as TheHive's job actor does, until the job has ended (the test's
// deadline is 30 s); Scala's Duration prints 1.second as "1 second", which WS sends as 1%20second.
func hiveWait(t *testing.T, c *client, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		j := hiveJob(t, hiveCall(t, c, http.MethodGet, "/api/job/"+id+"/waitreport?atMost=1%20second", ""))
		if st := j["status"]; st != "Waiting" && st != "InProgress" {
			return j
		}
	}
	t.Fatalf("job %s did not end within 30 s", id)
	return nil
}

func TestTheHiveCortexClient_Play(t *testing.T) {
	f := newJobFixture(t)
	hive := f.analyst // the Cortex user TheHive is configured with (read, analyze)
	responder := f.admin.Call(t, http.MethodPost, "/api/organization/responder/Test_Responder_1_0", map[string]any{}).
		Want(t, http.StatusCreated).Object(t)["id"].(string)

	t.Run("getVersion and getHealth", func(t *testing.T) {
		m := hiveCall(t, hive, http.MethodGet, "/api/status", "").Want(t, http.StatusOK).Object(t)
		v, _ := m["versions"].(map[string]any)
		if s, ok := v["Cortex"].(string); !ok || s == "" { // (json \ "versions" \ "Cortex").as[String]
			t.Fatalf("status without a string versions.Cortex: %v", m)
		}
	})
	t.Run("getCurrentUser", func(t *testing.T) {
		m := hiveCall(t, hive, http.MethodGet, "/api/user/current", "").Want(t, http.StatusOK).Object(t)
		if hiveString(t, "user", m, "id") != "soc-analyst" {
			t.Fatalf("current user %v", m)
		}
	})
	t.Run("listAnalyser", func(t *testing.T) {
		for _, p := range []string{"/api/analyzer", "/api/analyzer?range=all"} {
			if l := hiveWorkers(t, hiveCall(t, hive, http.MethodGet, p, "")); len(l) != 1 || l[0]["id"] != f.analyzer {
				t.Fatalf("%s: %v", p, l)
			}
		}
	})
	t.Run("listAnalyzersByType", func(t *testing.T) {
		if l := hiveWorkers(t, hiveCall(t, hive, http.MethodGet, "/api/analyzer/type/ip", "")); len(l) != 1 {
			t.Fatalf("ip analyzers %v", l)
		}
		if l := hiveWorkers(t, hiveCall(t, hive, http.MethodGet, "/api/analyzer/type/mail", "")); len(l) != 0 {
			t.Fatalf("mail analyzers %v", l)
		}
	})
	t.Run("getAnalyzer", func(t *testing.T) {
		r := hiveCall(t, hive, http.MethodGet, "/api/analyzer/"+f.analyzer, "").Want(t, http.StatusOK)
		hiveWorker(t, r.Object(t))
	})
	t.Run("getAnalyzerByName", func(t *testing.T) {
		l := hiveWorkers(t, hiveCall(t, hive, http.MethodPost, "/api/analyzer/_search",
			`{"query":{"_field":"name","_value":"Test_Echo"},"range":"0-1"}`))
		if len(l) != 1 || l[0]["id"] != f.analyzer {
			t.Fatalf("by name %v", l)
		}
	})
	t.Run("searchAnalyzers", func(t *testing.T) {
		// AnalyzerSrv.searchAnalyzers goes through the client's searchResponders (as 4.1.24 does).
		l := hiveWorkers(t, hiveCall(t, hive, http.MethodPost, "/api/responder/_search",
			`{"query":{"_field":"name","_value":"Test_Echo"},"range":"all"}`))
		if len(l) != 0 {
			t.Fatalf("responders named like the analyzer %v", l)
		}
	})

	var jobID, fileJobID string
	t.Run("analyse JSON", func(t *testing.T) {
		j := hiveJob(t, hiveCall(t, hive, http.MethodPost, "/api/analyzer/"+f.analyzer+"/run",
			`{"tlp":2,"pap":2,"dataType":"ip","message":"42","data":"198.51.100.1"}`))
		jobID, _ = j["id"].(string)
		if j["data"] != "198.51.100.1" || j["workerId"] != f.analyzer || j["type"] != "analyzer" {
			t.Fatalf("job %v", j)
		}
	})
	content := []byte("MZ\x90\x00 not really a binary\n")
	sum := sha256.Sum256(content)
	t.Run("analyse multipart", func(t *testing.T) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="data"; filename="sample.bin"`)
		h.Set("Content-Type", "application/octet-stream")
		w, _ := mw.CreatePart(h)
		_, _ = w.Write(content)
		h = textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="_json"`)
		w, _ = mw.CreatePart(h)
		_, _ = w.Write([]byte(`{"tlp":2,"pap":2,"dataType":"file","message":"42"}`))
		_ = mw.Close()
		r := hive.Send(t, http.MethodPost, "/api/analyzer/"+f.analyzer+"/run", mw.FormDataContentType(), &buf,
			http.Header{"User-Agent": {"AHC/2.1"}, "Accept": {"*/*"}})
		j := hiveJob(t, r)
		fileJobID, _ = j["id"].(string)
		a, _ := j["attachment"].(map[string]any)
		if j["dataType"] != "file" || a["name"] != "sample.bin" || a["id"] != hex.EncodeToString(sum[:]) {
			t.Fatalf("file job %v", j)
		}
	})
	t.Run("getReport", func(t *testing.T) {
		for _, id := range []string{jobID, fileJobID} {
			j := hiveWait(t, hive, id)
			rep, _ := j["report"].(map[string]any)
			if j["status"] != "Success" || rep["success"] != true {
				t.Fatalf("job %v", j)
			}
		}
	})
	t.Run("getReport artifacts", func(t *testing.T) {
		j := hiveJob(t, hiveCall(t, hive, http.MethodPost, "/api/analyzer/"+f.analyzer+"/run",
			`{"tlp":2,"pap":2,"dataType":"ip","message":"43","data":"198.51.100.2","parameters":{"artifact":"203.0.113.9"}}`))
		j = hiveWait(t, hive, j["id"].(string))
		arts, _ := j["report"].(map[string]any)["artifacts"].([]any)
		if len(arts) == 0 || arts[0].(map[string]any)["data"] != "203.0.113.9" {
			t.Fatalf("artifacts %v", j["report"])
		}
	})
	t.Run("getAttachment", func(t *testing.T) {
		r := hiveCall(t, hive, http.MethodGet, "/api/datastore/"+hex.EncodeToString(sum[:]), "").Want(t, http.StatusOK)
		if !bytes.Equal(r.Body, content) {
			t.Fatalf("datastore answered %q", r.Body)
		}
	})
	t.Run("getRespondersByType", func(t *testing.T) {
		l := hiveWorkers(t, hiveCall(t, hive, http.MethodPost, "/api/responder/_search",
			`{"query":{"_field":"dataTypeList","_value":"thehive:case"},"range":"all"}`))
		if len(l) != 1 || l[0]["id"] != responder {
			t.Fatalf("case responders %v", l)
		}
		l = hiveWorkers(t, hiveCall(t, hive, http.MethodPost, "/api/responder/_search",
			`{"query":{"_field":"dataTypeList","_value":"thehive:alert"},"range":"all"}`))
		if len(l) != 0 {
			t.Fatalf("alert responders %v", l)
		}
	})
	t.Run("searchResponders", func(t *testing.T) {
		l := hiveWorkers(t, hiveCall(t, hive, http.MethodPost, "/api/responder/_search",
			`{"query":{"_and":[{"_field":"dataTypeList","_value":"thehive:case"},{"_field":"name","_value":"Test_Responder"}]},"range":"all"}`))
		if len(l) != 1 {
			t.Fatalf("responders %v", l)
		}
	})
	t.Run("getResponder", func(t *testing.T) {
		hiveWorker(t, hiveCall(t, hive, http.MethodGet, "/api/responder/"+responder, "").Want(t, http.StatusOK).Object(t))
	})
	t.Run("getResponderByName", func(t *testing.T) {
		l := hiveWorkers(t, hiveCall(t, hive, http.MethodPost, "/api/responder/_search",
			`{"query":{"_field":"name","_value":"Test_Responder"},"range":"0-1"}`))
		if len(l) != 1 || l[0]["id"] != responder {
			t.Fatalf("by name %v", l)
		}
	})
	t.Run("execute", func(t *testing.T) {
		j := hiveJob(t, hiveCall(t, hive, http.MethodPost, "/api/responder/"+responder+"/run",
			`{"label":"#1 Phishing","data":{"_id":"~4096","id":"~4096","_type":"case","caseId":1,"title":"Phishing","tlp":2,"pap":2},"dataType":"thehive:case","tlp":2,"pap":2,"parameters":{}}`))
		if j["type"] != "responder" || j["workerId"] != responder {
			t.Fatalf("action job %v", j)
		}
		j = hiveWait(t, hive, j["id"].(string))
		ops, _ := j["report"].(map[string]any)["operations"].([]any)
		if len(ops) != 1 || ops[0].(map[string]any)["type"] != "AddTagToCase" {
			t.Fatalf("operations %v", j["report"])
		}
	})
	// What TheHive's status check makes of refusals: a bad key is AUTH_ERROR (401 on user/current while
	// status answers), another organization's analyzer is not found.
	t.Run("refusals", func(t *testing.T) {
		bad := f.e.keyClient("x", "wrong-key-0123456789-0123456789-xy")
		hiveCall(t, bad, http.MethodGet, "/api/status", "").Want(t, http.StatusOK)
		hiveCall(t, bad, http.MethodGet, "/api/user/current", "").WantError(t, http.StatusUnauthorized, "AuthenticationError")
		hiveCall(t, f.other, http.MethodGet, "/api/analyzer/"+f.analyzer, "").WantError(t, http.StatusNotFound, "NotFoundError")
		hiveCall(t, f.other, http.MethodGet, "/api/job/"+jobID+"/waitreport?atMost=1%20second", "").
			WantError(t, http.StatusNotFound, "NotFoundError")
		hiveCall(t, f.other, http.MethodGet, "/api/datastore/"+hex.EncodeToString(sum[:]), "").
			WantError(t, http.StatusNotFound, "NotFoundError")
		hiveCall(t, f.reads, http.MethodPost, "/api/analyzer/"+f.analyzer+"/run",
			`{"tlp":2,"pap":2,"dataType":"ip","message":"1","data":"10.0.0.1"}`).WantError(t, http.StatusForbidden, "AuthorizationError")
		hiveCall(t, hive, http.MethodPost, "/api/analyzer/"+f.analyzer+"/run",
			`{"tlp":2,"pap":2,"dataType":"mail","message":"1","data":"a@b.c"}`).WantError(t, http.StatusBadRequest, "BadRequest")
	})
}
