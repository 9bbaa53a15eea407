package api_test

// Every public method of cortex4py 2.1.0 (TheHive-Project/Cortex4py: cortex4py/api.py, controllers/*.py and
// the query helpers), each sent as the request python-requests builds for it: the method, the path under
// <url>/api/, the query string of its `params` (None values dropped, dict order kept), the JSON body as
// json.dumps writes it, `Authorization: Bearer <key>` and requests' own headers. Each row then checks what the
// client reads from the answer: the status (anything but 2xx raises), `.json()` into the model of the method
// (the keys of the model's defaults in cortex4py/models/*.py), `.text` for keys, and `count` for count().
// Two model defaults are names the reference server never sends and are checked under the name it does
// send: User `login` (the login is `id`) and AnalyzerDefinition/ResponderDefinition `basicConfig` (`baseConfig`).

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"testing"
)

// pyReq is one request as cortex4py sends it.
type pyReq struct {
	method string
	path   string  // from /api/, with the query string as requests encodes `params`
	json   string  // do_post/do_patch body (json.dumps); "" = no body (do_get, do_delete)
	file   *pyFile // do_file_post: the form field `_json`, then the file part `data`
}

// pyFile is the multipart body of do_file_post (requests: data={'_json': …}, files={'data': (name, f, mime)}).
type pyFile struct {
	json, name, contentType string
	content                 []byte
}

// pyHeaders are the headers python-requests adds by itself.
func pyHeaders() http.Header {
	return http.Header{"User-Agent": {"python-requests/2.25.1"}, "Accept": {"*/*"},
		"Accept-Encoding": {"gzip, deflate"}, "Connection": {"keep-alive"}}
}

func (r pyReq) send(t *testing.T, c *client) *resp {
	t.Helper()
	switch {
	case r.file != nil:
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="_json"`)
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(r.file.json))
		h = textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="data"; filename="%s"`, r.file.name))
		h.Set("Content-Type", r.file.contentType)
		if w, err = mw.CreatePart(h); err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(r.file.content)
		if err := mw.Close(); err != nil {
			t.Fatal(err)
		}
		return c.Send(t, r.method, r.path, mw.FormDataContentType(), &buf, pyHeaders())
	case r.json != "":
		return c.Send(t, r.method, r.path, "application/json", strings.NewReader(r.json), pyHeaders())
	default:
		return c.Send(t, r.method, r.path, "", nil, pyHeaders())
	}
}

// Model fields of cortex4py/models (the keys of each model's defaults), as the reference server names them.
var (
	pyOrganization = []string{"id", "name", "description", "status"}
	pyUser         = []string{"id", "name", "organization", "status", "roles"}
	pyAnalyzer     = []string{"id", "name", "analyzerDefinitionId", "description", "version", "author", "url", "license"}
	pyResponder    = []string{"id", "name", "workerDefinitionId", "description", "version", "author", "url", "license",
		"dataTypeList", "rate", "rateUnit"}
	pyDefinition = []string{"id", "name", "description", "version", "author", "url", "license", "baseConfig",
		"dataTypeList", "configurationItems"}
	pyJob = []string{"id", "type", "organization", "workerId", "workerDefinitionId", "workerName", "status",
		"dataType", "tlp", "parameters", "message", "date"}
	pyJobArtifact = []string{"id", "tlp", "dataType", "data"}
)

// pyModel fails unless the object carries every field of the model.
func pyModel(t *testing.T, what string, m map[string]any, fields []string) {
	t.Helper()
	for _, f := range fields {
		if _, ok := m[f]; !ok {
			t.Errorf("%s: no %q in %v", what, f, m)
		}
	}
}

// pyModels decodes a list and checks each item against the model; it returns the list.
func pyModels(t *testing.T, r *resp, fields []string) []map[string]any {
	t.Helper()
	l := plainMaps(r.List(t))
	for _, m := range l {
		pyModel(t, r.Path, m, fields)
	}
	return l
}

// pyIDs are the ids of a list, in order.
func pyIDs(l []map[string]any) []string {
	out := make([]string, len(l))
	for i, m := range l {
		out[i], _ = m["id"].(string)
	}
	return out
}

// pyStep is one call of a cortex4py method.
type pyStep struct {
	method string         // controller.method as a script writes it
	as     func() *client // whose key
	req    func() pyReq
	status int
	check  func(t *testing.T, r *resp)
}

func TestCortex4py_EveryMethod(t *testing.T) {
	e := newEnv(t)
	// State the steps hand to each other, as a script would keep it.
	var adminKey, userKey, key1, key2, analyzerID, responderID, jobID, fileJobID, artJobID string
	super := func() *client { return e.super }
	admin := func() *client { return e.keyClient("demo-admin", adminKey) }
	user := func() *client { return e.keyClient("User-abc123", userKey) }
	get := func(path string) func() pyReq {
		return func() pyReq { return pyReq{method: http.MethodGet, path: path} }
	}
	post := func(path, body string) func() pyReq {
		return func() pyReq { return pyReq{method: http.MethodPost, path: path, json: body} }
	}
	obj := func(fields []string, more func(t *testing.T, m map[string]any)) func(t *testing.T, r *resp) {
		return func(t *testing.T, r *resp) {
			m := r.Object(t)
			pyModel(t, r.Path, m, fields)
			if more != nil {
				more(t, m)
			}
		}
	}
	list := func(fields []string, more func(t *testing.T, l []map[string]any)) func(t *testing.T, r *resp) {
		return func(t *testing.T, r *resp) {
			l := pyModels(t, r, fields)
			if more != nil {
				more(t, l)
			}
		}
	}
	// only compares the ids as a set: objects made in the same millisecond come back in id order.
	only := func(ids ...string) func(t *testing.T, l []map[string]any) {
		return func(t *testing.T, l []map[string]any) {
			got, want := pyIDs(l), slices.Clone(ids)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("ids %v, want %v", got, want)
			}
		}
	}
	field := func(k string, v any) func(t *testing.T, m map[string]any) {
		return func(t *testing.T, m map[string]any) {
			if fmt.Sprint(m[k]) != fmt.Sprint(v) {
				t.Errorf("%s = %v, want %v in %v", k, m[k], v, m)
			}
		}
	}
	key := func(dst *string) func(t *testing.T, r *resp) {
		return func(t *testing.T, r *resp) {
			if *dst = r.Text(t); len(*dst) < 32 {
				t.Fatalf("key %q", *dst)
			}
		}
	}
	jobOf := func(dst *string, more func(t *testing.T, m map[string]any)) func(t *testing.T, r *resp) {
		return obj(pyJob, func(t *testing.T, m map[string]any) {
			*dst, _ = m["id"].(string)
			if more != nil {
				more(t, m)
			}
		})
	}
	finished := func(t *testing.T, m map[string]any) {
		if m["status"] != "Success" {
			t.Fatalf("job %v", m)
		}
		rep, _ := m["report"].(map[string]any)
		for _, k := range []string{"summary", "full", "success", "artifacts"} { // what Usage.md's scripts read
			if _, ok := rep[k]; !ok {
				t.Errorf("report without %q: %v", k, m["report"])
			}
		}
	}
	const caseData = `{"title": "Sample case", "description": "This is a sample case"}`
	steps := []pyStep{
		{"api.status", super, get("/api/status"), 200, func(t *testing.T, r *resp) {
			if v, _ := r.Object(t)["versions"].(map[string]any); v["Cortex"] == nil {
				t.Errorf("status without versions.Cortex: %s", r.Body)
			}
		}},
		// Organizations (superadmin).
		{"organizations.create", super, post("/api/organization",
			`{"name": "demo", "description": "This is a demo organization", "status": "Active"}`), 201,
			obj(pyOrganization, field("id", "demo"))},
		{"organizations.create (to delete)", super, post("/api/organization",
			`{"name": "gone", "description": "To be deleted", "status": "Active"}`), 201, obj(pyOrganization, nil)},
		{"organizations.find_all", super, post("/api/organization/_search?sort=-createdAt&range=0-10", `{"query": {}}`),
			200, list(pyOrganization, only("gone", "demo", "admin"))},
		{"organizations.find_one_by", super, post("/api/organization/_search?range=0-1&sort=-createdAt",
			`{"query": {"_field": "description", "_value": "To be deleted"}}`), 200, list(pyOrganization, only("gone"))},
		{"organizations.get_by_id", super, get("/api/organization/demo"), 200, obj(pyOrganization, field("status", "Active"))},
		{"organizations.count", super, post("/api/organization/_stats",
			`{"query": {"_field": "status", "_value": "Active"}, "stats": [{"_agg": "count"}]}`), 200,
			obj([]string{"count"}, field("count", 3))},
		{"organizations.update", super, func() pyReq {
			return pyReq{method: http.MethodPatch, path: "/api/organization/demo", json: `{"description": "This is an disabled organization"}`}
		}, 200, obj(pyOrganization, field("description", "This is an disabled organization"))},
		{"organizations.delete", super, func() pyReq { return pyReq{method: http.MethodDelete, path: "/api/organization/gone"} },
			204, nil},
		{"organizations.count (locked)", super, post("/api/organization/_stats",
			`{"query": {"_field": "status", "_value": "Locked"}, "stats": [{"_agg": "count"}]}`), 200,
			obj([]string{"count"}, field("count", 1))},
		// Users.
		{"users.create (orgadmin)", super, post("/api/user",
			`{"login": "demo-admin", "name": "Demo admin", "roles": ["read", "analyze", "orgadmin"], "status": "Ok", "organization": "demo"}`),
			201, obj(pyUser, field("id", "demo-admin"))},
		{"users.set_key (orgadmin)", super, post("/api/user/demo-admin/key/renew", `{}`), 200, key(&adminKey)},
		{"users.create", admin, post("/api/user",
			`{"login": "User-abc123", "name": "User abc123", "roles": ["read", "analyze"], "status": "Ok", "organization": "demo"}`),
			201, obj(pyUser, func(t *testing.T, m map[string]any) {
				if m["id"] != "User-abc123" || m["organization"] != "demo" || m["status"] != "Ok" {
					t.Errorf("created %v", m)
				}
			})},
		{"users.find_all", super, post("/api/user/_search?sort=-createdAt&range=0-10",
			`{"query": {"_field": "status", "_value": "Ok"}}`), 200, list(pyUser, only("User-abc123", "demo-admin", superLogin))},
		{"users.find_one_by", super, post("/api/user/_search?range=0-1",
			`{"query": {"_field": "name", "_value": "Demo admin"}}`), 200, list(pyUser, only("demo-admin"))},
		{"users.get_by_id", admin, get("/api/user/User-abc123"), 200, obj(pyUser, field("name", "User abc123"))},
		{"users.update", admin, func() pyReq {
			return pyReq{method: http.MethodPatch, path: "/api/user/User-abc123", json: `{"name": "New User", "roles": ["read", "analyze"]}`}
		}, 200, obj(pyUser, field("name", "New User"))},
		{"users.set_password", admin, post("/api/user/User-abc123/password/set", `{"password": "password"}`), 204, nil},
		{"users.set_key", admin, post("/api/user/User-abc123/key/renew", `{}`), 200, key(&key1)},
		{"users.get_key", admin, get("/api/user/User-abc123/key"), 200, func(t *testing.T, r *resp) {
			if r.Text(t) != key1 {
				t.Errorf("get_key %q, want the key set_key returned", r.Body)
			}
		}},
		{"users.renew_key", admin, post("/api/user/User-abc123/key/renew", `{}`), 200, func(t *testing.T, r *resp) {
			if key(&key2)(t, r); key2 == key1 {
				t.Error("renew_key returned the same key")
			}
			userKey = key2
		}},
		{"users.change_password", user, post("/api/user/User-abc123/password/change",
			`{"currentPassword": "password", "password": "new-password"}`), 204, nil},
		// Organizations as orgadmin.
		{"organizations.get_users", admin, post("/api/organization/demo/user/_search?sort=-createdAt&range=0-5",
			`{"query": {"_field": "status", "_value": "Active"}}`), 200, list(pyUser, only("User-abc123", "demo-admin"))},
		// Analyzers (orgadmin).
		{"analyzers.definitions", admin, get("/api/analyzerdefinition"), 200, list(pyDefinition, nil)},
		{"analyzers.enable", admin, post("/api/organization/analyzer/Test_Echo_1_0",
			`{"configuration": {"proxy_http": "http://localhost:9999", "proxy_https": "http://localhost:9999", "auto_extract_artifacts": false, "check_tlp": true, "max_tlp": 2, "max_pap": 2}, "jobCache": 10, "jobTimeout": 30, "rate": 1000, "rateUnit": "Day", "name": "Test_Echo_1_0"}`),
			201, obj(append(pyAnalyzer, "workerDefinitionId", "configuration"), func(t *testing.T, m map[string]any) {
				analyzerID, _ = m["id"].(string)
				field("workerDefinitionId", "Test_Echo_1_0")(t, m) // Usage.md: analyzer.workerDefinitionId == 'Test_1_0'
			})},
		{"organizations.get_analyzers", admin, get("/api/analyzer"), 200, list(pyAnalyzer, func(t *testing.T, l []map[string]any) {
			only(analyzerID)(t, l)
		})},
		{"analyzers.find_all", admin, post("/api/analyzer/_search?range=all", `{"query": {}}`), 200,
			list(pyAnalyzer, func(t *testing.T, l []map[string]any) { only(analyzerID)(t, l) })},
		{"analyzers.find_one_by", admin, post("/api/analyzer/_search?range=0-1", `{"query": {"_field": "dataTypeList", "_value": "domain"}}`),
			200, list(pyAnalyzer, func(t *testing.T, l []map[string]any) { only(analyzerID)(t, l) })},
		{"analyzers.get_by_id", admin, func() pyReq { return get("/api/analyzer/" + analyzerID)() }, 200, obj(pyAnalyzer, nil)},
		{"analyzers.get_by_name", admin, post("/api/analyzer/_search?range=0-1", `{"query": {"_field": "name", "_value": "Test_Echo_1_0"}}`),
			200, list(pyAnalyzer, func(t *testing.T, l []map[string]any) { only(analyzerID)(t, l) })},
		{"analyzers.get_by_type", admin, get("/api/analyzer/type/domain"), 200,
			list(pyAnalyzer, func(t *testing.T, l []map[string]any) { only(analyzerID)(t, l) })},
		{"analyzers.update", admin, func() pyReq {
			return pyReq{method: http.MethodPatch, path: "/api/analyzer/" + analyzerID,
				json: `{"rate": 100, "rateUnit": "Day", "jobCache": null, "configuration": {"proxy_http": null, "proxy_https": null, "auto_extract_artifacts": true, "check_tlp": false, "max_tlp": null, "max_pap": 2}}`}
		}, 200, obj(pyAnalyzer, func(t *testing.T, m map[string]any) {
			if m["rate"] != float64(100) || m["jobCache"] != nil {
				t.Errorf("updated %v", m)
			}
		})},
		{"analyzers.run_by_id", admin, func() pyReq {
			return post("/api/analyzer/"+analyzerID+"/run?force=1",
				`{"dataType": "domain", "tlp": 1, "pap": 2, "message": "custom message sent to analyzer", "parameters": {"key1": "value1", "key2": true, "key3": 10}, "data": "google.com"}`)()
		}, 200, jobOf(&jobID, func(t *testing.T, m map[string]any) {
			if m["data"] != "google.com" || m["workerId"] != analyzerID || m["workerName"] != "Test_Echo_1_0" ||
				m["workerDefinitionId"] != "Test_Echo_1_0" || m["tlp"] != float64(1) || m["type"] != "analyzer" {
				t.Errorf("job %v", m)
			}
		})},
		{"analyzers.run_by_id (file)", admin, func() pyReq {
			return pyReq{method: http.MethodPost, path: "/api/analyzer/" + analyzerID + "/run?force=1",
				file: &pyFile{json: `{"dataType": "file", "tlp": 1, "pap": 2}`, name: "sample.txt", contentType: "text/plain",
					content: []byte("sample content\n")}}
		}, 200, jobOf(&fileJobID, func(t *testing.T, m map[string]any) {
			if a, _ := m["attachment"].(map[string]any); a["name"] != "sample.txt" || m["dataType"] != "file" {
				t.Errorf("file job %v", m)
			}
		})},
		{"analyzers.run_by_name (search)", admin, post("/api/analyzer/_search?range=0-1",
			`{"query": {"_field": "name", "_value": "Test_Echo_1_0"}}`), 200, list(pyAnalyzer, nil)},
		{"analyzers.run_by_name (run)", admin, func() pyReq {
			return post("/api/analyzer/"+analyzerID+"/run",
				`{"dataType": "ip", "tlp": 2, "pap": 2, "parameters": {"artifact": "198.51.100.7"}, "data": "10.0.0.1"}`)()
		}, 200, jobOf(&artJobID, nil)},
		{"api.get_analyzers", admin, post("/api/analyzer/_search", `{"query": {}}`), 200,
			list(pyAnalyzer, func(t *testing.T, l []map[string]any) { only(analyzerID)(t, l) })},
		{"api.get_analyzers(data_type)", admin, get("/api/analyzer/type/ip"), 200,
			list(pyAnalyzer, func(t *testing.T, l []map[string]any) { only(analyzerID)(t, l) })},
		{"api.run_analyzer (search)", admin, post("/api/analyzer/_search?range=0-1",
			`{"query": {"_field": "name", "_value": "Test_Echo_1_0"}}`), 200, list(pyAnalyzer, nil)},
		{"api.run_analyzer (run)", admin, func() pyReq {
			return post("/api/analyzer/"+analyzerID+"/run", `{"dataType": "domain", "tlp": 2, "pap": 2, "data": "example.org"}`)()
		}, 200, obj(pyJob, nil)},
		// Jobs.
		{"api.get_job_report", admin, func() pyReq { return get("/api/job/" + jobID + "/waitreport?atMost=Inf")() }, 200,
			obj(pyJob, finished)},
		{"jobs.get_report_async", admin, func() pyReq { return get("/api/job/" + artJobID + "/waitreport?atMost=Inf")() }, 200,
			obj(pyJob, finished)},
		{"jobs.get_report_async (file)", admin, func() pyReq { return get("/api/job/" + fileJobID + "/waitreport?atMost=Inf")() },
			200, obj(pyJob, finished)},
		{"jobs.get_report", admin, func() pyReq { return get("/api/job/" + jobID + "/report")() }, 200, obj(pyJob, finished)},
		{"jobs.get_artifacts", admin, func() pyReq { return get("/api/job/" + artJobID + "/artifacts")() }, 200,
			list(pyJobArtifact, func(t *testing.T, l []map[string]any) {
				if len(l) == 0 || l[0]["data"] != "198.51.100.7" || l[0]["dataType"] != "ip" {
					t.Errorf("artifacts %v", l)
				}
			})},
		{"jobs.find_all", admin, post("/api/job/_search?sort=-createdAt&range=0-10",
			`{"query": {"_and": [{"_field": "status", "_value": "Success"}, {"_field": "dataType", "_value": "domain"}]}}`), 200,
			list(pyJob, func(t *testing.T, l []map[string]any) {
				for _, j := range l {
					if j["status"] != "Success" || j["dataType"] != "domain" {
						t.Errorf("job %v", j)
					}
				}
				if !slices.Contains(pyIDs(l), jobID) {
					t.Errorf("jobs %v, want %s among them", pyIDs(l), jobID)
				}
			})},
		{"jobs.find_one_by", admin, post("/api/job/_search?range=0-1&sort=-createdAt",
			`{"query": {"_field": "dataType", "_value": "file"}}`), 200, list(pyJob, func(t *testing.T, l []map[string]any) {
			only(fileJobID)(t, l)
		})},
		{"jobs.get_by_id", admin, func() pyReq { return get("/api/job/" + jobID)() }, 200, obj(pyJob, field("status", "Success"))},
		{"jobs.delete", admin, func() pyReq { return pyReq{method: http.MethodDelete, path: "/api/job/" + fileJobID} }, 204, nil},
		{"api.delete_job", admin, func() pyReq { return pyReq{method: http.MethodDelete, path: "/api/job/" + artJobID} }, 204, nil},
		{"jobs.get_by_id (deleted)", admin, func() pyReq { return get("/api/job/" + artJobID)() }, 200, obj(pyJob, field("status", "Deleted"))},
		// Responders (orgadmin).
		{"responders.definitions", admin, get("/api/responderdefinition"), 200, list(pyDefinition, nil)},
		{"responders.enable", admin, post("/api/organization/responder/Test_Responder_1_0",
			`{"configuration": {"proxy_http": "http://localhost:9999", "proxy_https": "http://localhost:9999", "check_tlp": true, "max_tlp": 2, "max_pap": 2}, "jobTimeout": 30, "rate": 1000, "rateUnit": "Day", "name": "Test_Responder_1_0"}`),
			201, obj(append(pyResponder, "configuration"), func(t *testing.T, m map[string]any) {
				responderID, _ = m["id"].(string)
				field("workerDefinitionId", "Test_Responder_1_0")(t, m)
			})},
		{"responders.find_all", admin, post("/api/responder/_search?range=all", `{"query": {}}`), 200,
			list(pyResponder, func(t *testing.T, l []map[string]any) { only(responderID)(t, l) })},
		{"responders.find_one_by", admin, post("/api/responder/_search?range=0-1", `{"query": {"_field": "rateUnit", "_value": "Day"}}`),
			200, list(pyResponder, func(t *testing.T, l []map[string]any) { only(responderID)(t, l) })},
		{"responders.get_by_id", admin, func() pyReq { return get("/api/responder/" + responderID)() }, 200, obj(pyResponder, nil)},
		{"responders.get_by_name", admin, post("/api/responder/_search?range=0-1",
			`{"query": {"_field": "name", "_value": "Test_Responder_1_0"}}`), 200,
			list(pyResponder, func(t *testing.T, l []map[string]any) { only(responderID)(t, l) })},
		{"responders.get_by_type", admin, get("/api/responder/type/thehive:case"), 200,
			list(pyResponder, func(t *testing.T, l []map[string]any) { only(responderID)(t, l) })},
		{"responders.update", admin, func() pyReq {
			return pyReq{method: http.MethodPatch, path: "/api/responder/" + responderID, json: `{"rate": 100, "rateUnit": "Hour"}`}
		}, 200, obj(pyResponder, field("rateUnit", "Hour"))},
		{"responders.run_by_id", admin, func() pyReq {
			return post("/api/responder/"+responderID+"/run", `{"dataType": "thehive:case", "tlp": 1, "data": `+caseData+`}`)()
		}, 200, obj(pyJob, func(t *testing.T, m map[string]any) {
			if d, _ := m["data"].(map[string]any); d["title"] != "Sample case" || m["type"] != "responder" || m["workerId"] != responderID {
				t.Errorf("responder job %v", m)
			}
		})},
		{"responders.run_by_name (search)", admin, post("/api/responder/_search?range=0-1",
			`{"query": {"_field": "name", "_value": "Test_Responder_1_0"}}`), 200, list(pyResponder, nil)},
		{"responders.run_by_name (run)", admin, func() pyReq {
			return post("/api/responder/"+responderID+"/run",
				`{"dataType": "thehive:case", "tlp": 1, "message": "from a script", "parameters": {"user": "me"}, "data": `+caseData+`}`)()
		}, 200, obj(pyJob, field("message", "from a script"))},
		{"responders.disable", admin, func() pyReq { return pyReq{method: http.MethodDelete, path: "/api/responder/" + responderID} },
			204, nil},
		{"analyzers.disable", admin, func() pyReq { return pyReq{method: http.MethodDelete, path: "/api/analyzer/" + analyzerID} },
			204, nil},
		// The rest of Usage.md's user script: revoke, lock, read back.
		{"users.revoke_key", admin, func() pyReq { return pyReq{method: http.MethodDelete, path: "/api/user/User-abc123/key"} },
			200, nil},
		{"users.lock", admin, func() pyReq {
			return pyReq{method: http.MethodPatch, path: "/api/user/User-abc123", json: `{"status": "Locked"}`}
		}, 200, obj(pyUser, field("status", "Locked"))},
		{"users.get_by_id (locked)", admin, get("/api/user/User-abc123"), 200, obj(pyUser, func(t *testing.T, m map[string]any) {
			if m["hasKey"] != false || m["hasPassword"] != true || m["status"] != "Locked" { // Usage.md's assertions
				t.Errorf("user %v", m)
			}
		})},
	}
	for _, s := range steps {
		t.Run(s.method, func(t *testing.T) {
			r := s.req().send(t, s.as())
			if r.Status != s.status {
				t.Fatalf("%s %s: status %d, want %d; body %s", r.Method, r.Path, r.Status, s.status, r.Body)
			}
			if s.check != nil {
				s.check(t, r)
			}
		})
	}
}

// TestCortex4py_Refusals: what cortex4py turns into its exceptions (NotFoundError on 404, AuthenticationError on
// 401, AuthorizationError on 403, InvalidInputError on 400) comes in the contract's error shape.
func TestCortex4py_Refusals(t *testing.T) {
	f := newJobFixture(t)
	for _, c := range []struct {
		name   string
		as     *client
		req    pyReq
		status int
		typ    string
	}{
		{"jobs.get_by_id unknown", f.analyst, pyReq{method: http.MethodGet, path: "/api/job/nope"}, 404, "NotFoundError"},
		{"analyzers.get_by_id other org", f.other, pyReq{method: http.MethodGet, path: "/api/analyzer/" + f.analyzer}, 404, "NotFoundError"},
		{"api.status is public; users.get_by_id is not", f.e.keyClient("x", "not-a-key-0123456789-0123456789-xx"),
			pyReq{method: http.MethodGet, path: "/api/user/soc-admin"}, 401, "AuthenticationError"},
		{"organizations.count as orgadmin", f.admin, pyReq{method: http.MethodPost, path: "/api/organization/_stats",
			json: `{"query": {}, "stats": [{"_agg": "count"}]}`}, 403, "AuthorizationError"},
		{"analyzers.enable as analyst", f.analyst, pyReq{method: http.MethodPost, path: "/api/organization/analyzer/Test_Echo_1_0",
			json: `{"configuration": {}, "name": "Test_Echo_1_0"}`}, 403, "AuthorizationError"},
		{"analyzers.run_by_id bad tlp", f.analyst, pyReq{method: http.MethodPost, path: "/api/analyzer/" + f.analyzer + "/run",
			json: `{"dataType": "ip", "tlp": 7, "pap": 2, "data": "10.0.0.1"}`}, 400, "AttributeCheckingError"},
		{"jobs.get_report_async bad timeout", f.analyst, pyReq{method: http.MethodGet, path: "/api/job/nope/waitreport?atMost=soon"},
			400, "BadRequest"},
		{"users.lock self", f.admin, pyReq{method: http.MethodPatch, path: "/api/user/soc-admin", json: `{"status": "Locked"}`},
			403, "AuthorizationError"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.req.send(t, c.as).WantError(t, c.status, c.typ)
		})
	}
}
