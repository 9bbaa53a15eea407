package api_test

// Fuzz targets over HTTP, against the real stack on the embedded database (each fuzz worker builds its own):
//
//	go test ./internal/api -run '^$' -fuzz FuzzQueryAPI -fuzztime 20s -fuzzminimizetime 50x
//	go test ./internal/api -run '^$' -fuzz FuzzObservableCreate -fuzztime 20s -fuzzminimizetime 50x
//
// Whatever the input, the answer is never a 5xx, an error has the shape of DECISIONS.md "Errors", and the
// service logs no failure.

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/yeka/zip"

	"github.com/openir/platform/case-svc/internal/archive/archivetest"
)

// checkFuzzAnswer fails on a 5xx, a malformed error, or a logged failure.
func checkFuzzAnswer(t *testing.T, e *env, r *resp) {
	t.Helper()
	if r.Status >= 500 {
		t.Fatalf("%s %s: %d %s\nlogs: %s", r.Method, r.Path, r.Status, r.Body, lastLines(e.logs.String(), 3))
	}
	if r.Status >= 400 {
		r.CheckErrorShape(t)
	}
	if strings.Contains(e.logs.String(), `"request failed"`) {
		t.Fatalf("%s %s: failure logged: %s", r.Method, r.Path, lastLines(e.logs.String(), 3))
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// FuzzQueryAPI posts the body to /api/v0/query or /api/v1/query as an analyst of an organisation holding a case
// with a task and a log, an alert with observables, and a similar case.
func FuzzQueryAPI(f *testing.F) {
	tm := newTeam(f)
	cs := tm.analyst.newCase(f, map[string]any{"tasks": []map[string]any{{"title": "t"}}})
	caseID := cs.Str(f, "id")
	task := tm.analyst.Call(f, http.MethodGet, "/api/case/"+caseID+"/task", nil).Want(f, 200).List(f)[0].Str(f, "id")
	tm.analyst.Call(f, http.MethodPost, "/api/case/task/"+task+"/log", map[string]any{"message": "m"}).Want(f, 201)
	obs := tm.analyst.observables(f, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": []string{"10.0.0.1", "10.0.0.2"}})
	alert := tm.analyst.Call(f, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "r",
		"title": "a", "description": "d", "artifacts": []any{map[string]any{"dataType": "ip", "data": "10.0.0.1"}}}).Want(f, 201).Object(f)
	for _, s := range []string{
		`{"query":[{"_name":"getObservable","idOrName":"` + obs[0].Str(f, "id") + `"},{"_name":"jobs"},{"_name":"sort","_fields":[{"startDate":"desc"}]},{"_name":"page","from":0,"to":10}]}`,
		`{"query":[{"_name":"getAlert","idOrName":"` + alert.Str(f, "id") + `"},{"_name":"similarCases","caseFilter":{"_field":"status","_value":"Open"}},{"_name":"sort","_fields":[{"similarObservableCount":"desc"}]}]}`,
		`{"query":[{"_name":"getAlert","idOrName":"t;s;r"},{"_name":"observables"},{"_name":"case"}]}`,
		`{"query":[{"_name":"waitingTasks"},{"_name":"sort","_fields":[{"flag":"desc"},{"startDate":"desc"}]},{"_name":"page","from":0,"to":15,"extraData":["case","caseId","total"]}]}`,
		`{"query":[{"_name":"getCase","idOrName":"` + caseID + `"},{"_name":"alerts"},{"_name":"sort","_fields":[{"date":"desc"}]},{"_name":"page","from":0,"to":5,"extraData":["similarCases","caseNumber"]}]}`,
		`{"query":[{"_name":"getCase","idOrName":"1"},{"_name":"tasks"},{"_name":"logs"},{"_name":"page","from":0,"to":5,"extraData":["case","task","taskId","actionCount"]}]}`,
		`{"query":[{"_name":"listCase"},{"_name":"filter","_and":[{"_field":"status","_value":"Open"},{"_not":{"_in":{"_field":"tags","_values":["a"]}}}]},{"_name":"page","from":0,"to":5,"extraData":["taskStats","observableStats","alerts","permissions"]}]}`,
		`{"query":[{"_name":"listObservable"},{"_name":"filter","_like":{"_field":"data","_value":"10.0"}},{"_name":"page","from":0,"to":5,"extraData":["seen","permissions"]}]}`,
		`{"query":[{"_name":"listTask"},{"_name":"case"},{"_name":"observables"},{"_name":"count"}]}`,
		`{"query":[{"_name":"listLog"},{"_name":"filter","_string":"message:m"},{"_name":"count"}]}`,
		`{"query":[{"_name":"listJob"},{"_name":"page","from":1000000,"to":1000001}]}`,
		`{"query":[{"_name":"getTask","idOrName":"` + task + `"},{"_name":"case"}]}`,
		`{"query":[{"_name":"listAlert"},{"_name":"filter","_parent":{"_type":"case","_query":{"_id":"~1"}}}]}`,
		`{"query":[{"_name":"nope"}]}`, `{"query":[]}`, `{}`, `[`, `{"query":[{"_name":"getCase","idOrName":"~999999999999999999999"}]}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, v1 bool) {
		path := "/api/v0/query"
		if v1 {
			path = "/api/v1/query?name=fuzz"
		}
		checkFuzzAnswer(t, tm.env, tm.analyst.Raw(t, http.MethodPost, path, "application/json", string(body)))
	})
}

// FuzzObservableCreate posts a multipart observable creation: the `_json` part, an optional plain field, and
// an `attachment` file part (unpacked when the JSON says isZip), to a case or an alert.
func FuzzObservableCreate(f *testing.F) {
	tm := newTeam(f)
	caseID := tm.analyst.newCase(f, nil).Str(f, "id")
	alertID := tm.analyst.Call(f, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s", "sourceRef": "r",
		"title": "a", "description": "d"}).Want(f, 201).Object(f).Str(f, "id")
	plain := archivetest.Zip(f, archivetest.File("dir/", nil), archivetest.File("dir/a.exe", []byte("first")), archivetest.File("b.dll", []byte("second")))
	var enc bytes.Buffer
	zw := zip.NewWriter(&enc)
	w, _ := zw.Encrypt("s.bin", "malware", zip.StandardEncryption)
	_, _ = w.Write([]byte("encrypted"))
	_ = zw.Close()
	for _, s := range []struct {
		js, field string
		file      []byte
		alert     bool
	}{
		{`{"dataType":"file","message":"m","tags":["a"]}`, "", []byte("MZ content"), false},
		{`{"dataType":"file","isZip":true}`, "", plain, false},
		{`{"dataType":"file","isZip":true,"zipPassword":"malware"}`, "", enc.Bytes(), false},
		{`{"dataType":"file","isZip":true,"zipPassword":"wrong"}`, "", enc.Bytes(), true},
		{`{"dataType":"ip","data":["1.2.3.4","5.6.7.8"],"tlp":3,"ioc":true}`, "", nil, false},
		{`{"dataType":"file","data":"n.txt;text/plain;aGVsbG8="}`, "", nil, true},
		{`{"dataType":"other","data":"x","startDate":1e30}`, "tags=a", nil, false},
		{`{"dataType":"file"}`, "isZip=true", []byte("PK\x03\x04 not really"), false},
		{`not json`, "dataType=domain", nil, false},
	} {
		f.Add(s.js, s.field, s.file, s.alert)
	}
	f.Fuzz(func(t *testing.T, js, field string, file []byte, alert bool) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("_json", js)
		if k, v, ok := strings.Cut(field, "="); ok {
			_ = mw.WriteField(k, v)
		}
		if file != nil {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="attachment"; filename="upload.bin"`)
			h.Set("Content-Type", "application/octet-stream")
			pw, _ := mw.CreatePart(h)
			_, _ = pw.Write(file)
		}
		_ = mw.Close()
		path := "/api/case/" + caseID + "/artifact"
		if alert {
			path = "/api/alert/" + alertID + "/artifact"
		}
		checkFuzzAnswer(t, tm.env, tm.analyst.Send(t, http.MethodPost, path, mw.FormDataContentType(), &buf, nil))
	})
}
