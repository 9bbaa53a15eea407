package api_test

// Every public method of thehive4py 1.8 (TheHive-Project/TheHive4py: thehive4py/api.py TheHiveApi, and
// models.py CaseHelper), each sent as the request python-requests builds for it, and checked for what the
// client reads from the answer. Source read: the stored thehive4py/api.py and models.py of the 1.8 line (the
// ones with `version=Version.THEHIVE_3.value` in TheHiveApi's constructor, `health()`,
// `download_observable_attachment(archive=True)` and CaseHelper.update through do_patch); the index holds no
// tagged copy, so where 1.8.2 differed from them in a detail this test would not know. The client is made as
// `TheHiveApi(url, key, organisation="soc", version=Version.THEHIVE_4.value)`; the methods whose request depends
// on the version are also sent as with the default, THEHIVE_3.
//
// Requests: the method, the path, the query string requests encodes from `params` (an empty `sort` list is
// dropped), `Authorization: Bearer <key>` and `X-Organisation: soc` (thehive4py/auth.py BearerAuth), requests'
// own headers, and the body: `json=` or `data=json.dumps(…)`/`jsonify()` (the keys and values json.dumps writes;
// jsonify sorts them), or the multipart form `{"_json": …}` with the file part `attachment`.
//
// | method | step (TestTheHive4py_EveryMethod) |
// |---|---|
// | health | health |
// | get_current_user | get_current_user |
// | create_case | create_case |
// | case.create (CaseHelper.create) | case.create: POST /api/case then GET /api/case/{id} |
// | case(id) (CaseHelper.__call__) | case(id) |
// | get_case | get_case |
// | update_case | update_case (every update key) · update_case (fields) |
// | case.update (CaseHelper.update) · do_patch | case.update |
// | find_cases | find_cases |
// | find_first | find_first |
// | get_linked_cases | get_linked_cases |
// | delete_case | delete_case · delete_case (force) |
// | create_case_task | create_case_task |
// | get_case_tasks | get_case_tasks · get_case_tasks (query) |
// | get_case_task | get_case_task |
// | update_case_task | update_case_task |
// | delete_case_task | delete_case_task (PATCH status Cancel) |
// | find_tasks | find_tasks |
// | create_task_log | create_task_log · create_task_log (file) |
// | get_task_log | get_task_log (v4: /api/v1/query getLog) · get_task_log (v3: GET) |
// | get_task_logs | get_task_logs |
// | find_task_logs | find_task_logs |
// | download_task_log_attachment | download_task_log_attachment · (archive) |
// | create_case_observable | create_case_observable · (v3) · (file) |
// | get_case_observable | get_case_observable |
// | get_case_observables | get_case_observables |
// | find_observables | find_observables |
// | update_case_observable | update_case_observable · (fields) |
// | update_case_observables | update_case_observables |
// | delete_case_observable | delete_case_observable |
// | download_attachment | download_attachment · download_attachment (archive: `?name<filename>`, as the client writes it) |
// | download_observable_attachment | download_observable_attachment |
// | find_case_templates | find_case_templates |
// | get_case_template | get_case_template (v4) · get_case_template (v3: `status: Ok`, which every template has) |
// | create_case_template | create_case_template |
// | create_alert | create_alert (v4, with a file artifact) · create_alert (v3) |
// | get_alert | get_alert · get_alert (similar cases) |
// | find_alerts | find_alerts |
// | update_alert | update_alert (every update key) · update_alert (fields) |
// | mark_alert_as_read · mark_alert_as_unread | mark_alert_as_read · mark_alert_as_unread |
// | merge_alert_into_case | merge_alert_into_case |
// | promote_alert_to_case | promote_alert_to_case |
// | delete_alert | delete_alert (`?force=1`) |
// | create_alert_artifact | create_alert_artifact · (file) |
// | update_alert_artifact | update_alert_artifact |
// | delete_alert_artifact | delete_alert_artifact |
// | run_analyzer | run_analyzer (an analysis server that cannot be reached: the job is accepted Waiting) |
//
// Deeper tests of some of these routes: links_test.go (get_linked_cases), datastorezip_test.go
// (download_observable_attachment's zip), parent_test.go (the _parent searches of get_case_tasks and
// get_task_logs), status_test.go (health), merge_test.go (the UI's case merge, which thehive4py 1.8 lacks).
//
// Not served, on purpose:
// - export_to_misp (`POST /api/connector/misp/export/{caseId}/{mispId}`): case-svc has no MISP connector; the
//   step checks the 404.
// - create_custom_field (`POST /api/list/custom_fields/_exists`, then `POST /api/list/custom_fields`): TheHive
//   3's list API, for TheHive 3 only as the client says; custom field definitions are made with TheHive 4's
//   `POST /api/customField`. The step checks the 404 of the first request (the client then raises).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/case-svc/internal/connector"
)

// h4Req is one request as thehive4py sends it.
type h4Req struct {
	method string
	path   string  // with the query string requests encodes from params
	json   string  // the JSON body; "" = none
	form   *h4Form // a multipart body: the field _json, then the file part attachment
	// jsonType sends Content-Type: application/json without a body (markAsRead/markAsUnread).
	jsonType bool
}

// h4Form is the multipart body of requests.post(data={'_json': …}, files={'attachment': (name, f, mime)}).
type h4Form struct {
	json, name, contentType string
	content                 []byte
}

func (r h4Req) send(t *testing.T, c *client) *resp {
	t.Helper()
	switch {
	case r.form != nil:
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		if err := mw.WriteField("_json", r.form.json); err != nil {
			t.Fatal(err)
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="attachment"; filename="%s"`, r.form.name))
		h.Set("Content-Type", r.form.contentType)
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(r.form.content)
		if err := mw.Close(); err != nil {
			t.Fatal(err)
		}
		return c.Send(t, r.method, r.path, mw.FormDataContentType(), &buf, nil)
	case r.json != "":
		return c.Send(t, r.method, r.path, "application/json", strings.NewReader(r.json), nil)
	case r.jsonType:
		return c.Send(t, r.method, r.path, "application/json", nil, nil)
	default:
		return c.Send(t, r.method, r.path, "", nil, nil)
	}
}

// h4Case is what CaseHelper reads of a case: the attributes it adds, and those Case(json=…) takes.
var h4Case = []string{"id", "owner", "caseId", "status", "createdAt", "createdBy", "updatedAt", "updatedBy",
	"title", "description", "tlp", "pap", "severity", "flag", "tags", "startDate", "customFields"}

// h4Step is one call of a thehive4py method.
type h4Step struct {
	method string // as a script writes it
	req    func() h4Req
	status int
	check  func(t *testing.T, r *resp)
}

func TestTheHive4py_EveryMethod(t *testing.T) {
	tm := newTeam(t, withServers(connector.AnalysisConfig{Scan: time.Hour, BackoffLo: time.Hour, BackoffHi: time.Hour}, azDown(nil)))
	api := tm.keyClient("socadmin", tm.orgAdmin.Key)
	for k, v := range map[string]string{"User-Agent": "python-requests/2.25.1", "Accept": "*/*",
		"Accept-Encoding": "gzip, deflate", "Connection": "keep-alive", "X-Organisation": "soc"} {
		api.Header.Set(k, v)
	}
	const start = 1700000000000 // startDate: int(time.time()) * 1000
	// State the steps hand to each other, as a script keeps it.
	var caseID, helperCaseID, taskID, logID, fileLogID, obsID, fileObsID, alertID, alert2ID, alertArtID, promoted string
	var logAttachment, obsAttachment map[string]any

	get := func(path string) func() h4Req {
		return func() h4Req { return h4Req{method: http.MethodGet, path: path} }
	}
	dyn := func(method string, path func() string, body func() string) func() h4Req {
		return func() h4Req {
			r := h4Req{method: method, path: path()}
			if body != nil {
				r.json = body()
			}
			return r
		}
	}
	s := func(v string) func() string { return func() string { return v } }
	object := func(fields []string, more func(t *testing.T, m obj)) func(t *testing.T, r *resp) {
		return func(t *testing.T, r *resp) {
			m := r.Object(t)
			for _, f := range fields {
				if _, ok := m[f]; !ok {
					t.Errorf("%s: no %q in %v", r.Path, f, m)
				}
			}
			if more != nil {
				more(t, m)
			}
		}
	}
	list := func(n int, more func(t *testing.T, l []obj)) func(t *testing.T, r *resp) {
		return func(t *testing.T, r *resp) {
			l := r.List(t)
			if n >= 0 && len(l) != n {
				t.Fatalf("%s: %d items, want %d: %s", r.Path, len(l), n, r.Body)
			}
			if more != nil {
				more(t, l)
			}
		}
	}
	id := func(dst *string) func(t *testing.T, m obj) {
		return func(t *testing.T, m obj) { *dst = m.Str(t, "id") }
	}
	field := func(k string, v any) func(t *testing.T, m obj) {
		return func(t *testing.T, m obj) {
			if fmt.Sprint(m[k]) != fmt.Sprint(v) {
				t.Errorf("%s = %v, want %v in %v", k, m[k], v, m)
			}
		}
	}
	first := func(more func(t *testing.T, m obj)) func(t *testing.T, l []obj) {
		return func(t *testing.T, l []obj) { more(t, l[0]) }
	}
	jsonOf := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	zip := func(t *testing.T, r *resp) {
		if ct := r.Header.Get("Content-Type"); ct != "application/zip" || !bytes.HasPrefix(r.Body, []byte("PK")) {
			t.Errorf("%s: %s, %d bytes, want a zip", r.Path, ct, len(r.Body))
		}
	}
	raw := func(want string) func(t *testing.T, r *resp) {
		return func(t *testing.T, r *resp) {
			if string(r.Body) != want {
				t.Errorf("%s: %q, want %q", r.Path, r.Body, want)
			}
		}
	}
	caseTask := func(title, status string, flag bool, owner, startDate any) map[string]any {
		return map[string]any{"description": nil, "flag": flag, "group": nil, "id": nil, "owner": owner,
			"startDate": startDate, "status": status, "title": title}
	}
	// Case(...).jsonify(excludes=['id']).
	caseJSON := func(title string, tasks ...map[string]any) string {
		if tasks == nil {
			tasks = []map[string]any{}
		}
		return jsonOf(map[string]any{"customFields": map[string]any{"h4score": map[string]any{"order": 0, "string": "high"}},
			"description": "N/A", "flag": true, "metrics": map[string]any{}, "owner": nil, "pap": 2, "severity": 2,
			"startDate": start, "tags": []string{"TheHive4Py", "sample"}, "tasks": tasks, "template": nil, "title": title, "tlp": 3})
	}
	parent := func(typ string, id *string) func() string {
		return func() string {
			return jsonOf(map[string]any{"query": map[string]any{"_parent": map[string]any{"_type": typ, "_query": map[string]any{"_id": *id}}}})
		}
	}
	p := func(format string, ids ...*string) func() string {
		return func() string {
			args := make([]any, len(ids))
			for i, v := range ids {
				args[i] = *v
			}
			return fmt.Sprintf(format, args...)
		}
	}
	logText := []byte("a log attachment\n")
	obsFile := []byte("an observable file\n")

	tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "h4score", "type": "string"}).Want(t, http.StatusCreated)

	steps := []h4Step{
		{"health", get("/api/health"), 200, raw("Warning")}, // the configured analysis server cannot be reached
		{"get_current_user", get("/api/user/current"), 200, object([]string{"id", "login", "name", "organisation", "profile"}, field("login", "socadmin"))},

		// Cases.
		{"create_case", dyn("POST", s("/api/case"), s(caseJSON("From TheHive4Py",
			caseTask("Tracking", "Waiting", false, nil, nil), caseTask("Investigation", "Waiting", true, nil, nil)))), 201,
			object(h4Case, func(t *testing.T, m obj) {
				id(&caseID)(t, m)
				field("flag", true)(t, m)
				field("tlp", 3)(t, m)
				if m.Obj(t, "customFields").Obj(t, "h4score")["string"] != "high" {
					t.Errorf("customFields %v", m["customFields"])
				}
			})},
		{"case.create (POST)", dyn("POST", s("/api/case"), s(caseJSON("From the helper"))), 201, object(h4Case, id(&helperCaseID))},
		{"case.create (GET)", dyn("GET", p("/api/case/%s", &helperCaseID), nil), 200, object(h4Case, field("title", "From the helper"))},
		{"case(id)", dyn("GET", p("/api/case/%s", &caseID), nil), 200, object(h4Case, field("status", "Open"))},
		{"get_case", dyn("GET", p("/api/case/%s", &caseID), nil), 200, object(h4Case, field("title", "From TheHive4Py"))},
		// update_case(case): every update key the case object holds (case.__dict__ order, json=).
		{"update_case (every update key)", dyn("PATCH", p("/api/case/%s", &caseID), func() string {
			return jsonOf(map[string]any{"title": "Updated by TheHive4Py", "description": "N/A", "tlp": 2, "pap": 2, "severity": 3,
				"flag": false, "tags": []string{"TheHive4Py"}, "startDate": start, "metrics": map[string]any{},
				"customFields": map[string]any{"h4score": map[string]any{"order": 0, "string": "low"}}, "owner": "socadmin", "status": "Open"})
		}), 200, object(h4Case, func(t *testing.T, m obj) { field("severity", 3)(t, m); field("title", "Updated by TheHive4Py")(t, m) })},
		{"update_case (fields)", dyn("PATCH", p("/api/case/%s", &caseID), s(`{"tlp": 1}`)), 200, object(h4Case, field("tlp", 1))},
		{"case.update (do_patch)", dyn("PATCH", p("/api/case/%s", &helperCaseID), s(`{"tlp": 1, "severity": 1, "flag": false}`)), 200,
			object([]string{"id"}, field("severity", 1))},
		{"case.update (GET)", dyn("GET", p("/api/case/%s", &helperCaseID), nil), 200, object(h4Case, field("tlp", 1))},
		{"find_cases", dyn("POST", s("/api/case/_search?range=all&sort=-startDate"),
			s(`{"query": {"_field": "title", "_value": "Updated by TheHive4Py"}}`)), 200,
			list(1, first(func(t *testing.T, m obj) { field("id", caseID)(t, m) }))},
		{"find_first", dyn("POST", s("/api/case/_search?range=0-1&sort=-startDate"), s(`{"query": {"_field": "tags", "_value": "sample"}}`)),
			200, list(1, first(func(t *testing.T, m obj) { field("id", helperCaseID)(t, m) }))},

		// Tasks.
		{"create_case_task", dyn("POST", p("/api/case/%s/task", &caseID), s(jsonOf(map[string]any{"description": nil, "flag": true,
			"group": nil, "owner": "socadmin", "startDate": start, "status": "InProgress", "title": "Yet Another Task"}))), 201,
			object([]string{"id", "title", "status", "owner", "flag"}, func(t *testing.T, m obj) { id(&taskID)(t, m); field("status", "InProgress")(t, m) })},
		{"get_case_tasks", dyn("POST", s("/api/case/task/_search?range=all"), parent("case", &caseID)), 200, list(3, nil)},
		{"get_case_tasks (query)", dyn("POST", s("/api/case/task/_search?range=all"), func() string {
			return jsonOf(map[string]any{"query": map[string]any{"_and": []any{
				map[string]any{"_parent": map[string]any{"_type": "case", "_query": map[string]any{"_id": caseID}}},
				map[string]any{"_field": "status", "_value": "InProgress"}}}})
		}), 200, list(1, first(func(t *testing.T, m obj) { field("id", taskID)(t, m) }))},
		{"get_case_task", dyn("GET", p("/api/case/task/%s", &taskID), nil), 200, object([]string{"id", "title", "status"}, field("title", "Yet Another Task"))},
		{"update_case_task", dyn("PATCH", p("/api/case/task/%s", &taskID), s(`{"title": "Renamed task", "flag": false}`)), 200,
			object([]string{"id"}, field("title", "Renamed task"))},
		{"find_tasks", dyn("POST", s("/api/case/task/_search?range=all"), s(`{"query": {"_field": "title", "_value": "Tracking"}}`)), 200, list(1, nil)},

		// Task logs.
		{"create_task_log", dyn("POST", p("/api/case/task/%s/log", &taskID), s(`{"message": "Started the investigation"}`)), 201,
			object([]string{"id", "message"}, id(&logID))},
		{"create_task_log (file)", func() h4Req {
			return h4Req{method: "POST", path: "/api/case/task/" + taskID + "/log",
				form: &h4Form{json: `{"message": "With a file"}`, name: "notes.txt", contentType: "text/plain", content: logText}}
		}, 201, object([]string{"id", "attachment"}, id(&fileLogID))},
		{"get_task_logs", dyn("POST", s("/api/case/task/log/_search?range=all"), parent("case_task", &taskID)), 200, list(2, nil)},
		{"find_task_logs", dyn("POST", s("/api/case/task/log/_search?range=all"), s(`{"query": {"_field": "message", "_value": "With a file"}}`)),
			200, list(1, nil)},
		{"get_task_log (v4)", dyn("POST", s("/api/v1/query"), func() string {
			return jsonOf(map[string]any{"query": []any{map[string]any{"_name": "getLog", "idOrName": fileLogID}}})
		}), 200, list(1, first(func(t *testing.T, m obj) {
			logAttachment = m.Obj(t, "attachment")
			if logAttachment["id"] == nil || logAttachment["name"] != "notes.txt" {
				t.Errorf("attachment %v, want id and name", logAttachment)
			}
		}))},
		{"get_task_log (v3)", dyn("GET", p("/api/case/task/log/%s", &logID), nil), 200, object([]string{"id", "message"}, field("message", "Started the investigation"))},
		{"download_task_log_attachment", dyn("GET", func() string {
			return fmt.Sprintf("/api/datastore/%s?name=%s", logAttachment["id"], logAttachment["name"])
		}, nil), 200, raw(string(logText))},
		{"download_task_log_attachment (archive)", dyn("GET", func() string {
			return fmt.Sprintf("/api/datastorezip/%s?name%s", logAttachment["id"], logAttachment["name"])
		}, nil), 200, zip},

		// Observables.
		{"create_case_observable", dyn("POST", p("/api/case/%s/artifact", &caseID), s(`{"data": ["192.0.2.10"], "dataType": "ip", `+
			`"ignoreSimilarity": false, "ioc": true, "message": "From TheHive4Py", "sighted": false, "tags": ["TheHive4Py"], "tlp": 1}`)), 201,
			list(1, first(func(t *testing.T, m obj) { id(&obsID)(t, m); field("ioc", true)(t, m) }))},
		{"create_case_observable (v3)", dyn("POST", p("/api/case/%s/artifact", &caseID), s(`{"data": ["evil.example"], "dataType": "domain", `+
			`"ioc": false, "message": "From TheHive4Py", "sighted": true, "tags": [], "tlp": 2}`)), 201, list(1, nil)},
		{"create_case_observable (file)", func() h4Req {
			return h4Req{method: "POST", path: "/api/case/" + caseID + "/artifact", form: &h4Form{json: `{"dataType": "file", ` +
				`"message": "a file", "tlp": 2, "tags": ["TheHive4Py"], "ioc": false, "sighted": false, "ignoreSimilarity": false}`,
				name: "sample.txt", contentType: "text/plain", content: obsFile}}
		}, 201, list(1, first(id(&fileObsID)))},
		{"get_case_observable", dyn("GET", p("/api/case/artifact/%s", &fileObsID), nil), 200,
			object([]string{"id", "dataType", "attachment"}, func(t *testing.T, m obj) { obsAttachment = m.Obj(t, "attachment") })},
		{"get_case_observables", dyn("POST", s("/api/case/artifact/_search?range=all"), parent("case", &caseID)), 200, list(3, nil)},
		{"find_observables", dyn("POST", s("/api/case/artifact/_search?range=all"), s(`{"query": {"_field": "dataType", "_value": "ip"}}`)),
			200, list(1, nil)},
		// update_case_observable(id, observable): every update key (message, tlp, tags, ioc, sighted, ignoreSimilarity).
		{"update_case_observable", dyn("PATCH", p("/api/case/artifact/%s", &obsID), s(`{"message": "updated", "tlp": 2, `+
			`"tags": ["TheHive4Py", "updated"], "ioc": false, "sighted": true, "ignoreSimilarity": false}`)), 200,
			object([]string{"id"}, field("sighted", true))},
		{"update_case_observable (fields)", dyn("PATCH", p("/api/case/artifact/%s", &obsID), s(`{"ioc": true}`)), 200, object([]string{"id"}, field("ioc", true))},
		{"update_case_observables", dyn("PATCH", p("/api/case/artifact/%s", &obsID), s(`{"tags": ["deprecated call"]}`)), 200,
			object([]string{"id"}, field("tags", []string{"deprecated call"}))},
		{"download_observable_attachment", dyn("GET", func() string {
			return fmt.Sprintf("/api/datastorezip/%s?name%s", obsAttachment["id"], obsAttachment["name"])
		}, nil), 200, zip},
		{"download_attachment", dyn("GET", func() string { return fmt.Sprintf("/api/datastore/%s?name=attachment", obsAttachment["id"]) }, nil),
			200, raw(string(obsFile))},
		{"download_attachment (archive)", dyn("GET", func() string { return fmt.Sprintf("/api/datastorezip/%s?nameattachment", obsAttachment["id"]) }, nil),
			200, zip},
		{"get_linked_cases", dyn("GET", p("/api/case/%s/links", &caseID), nil), 200, list(0, nil)},

		// Case templates.
		{"create_case_template", dyn("POST", s("/api/case/template"), s(jsonOf(map[string]any{"customFields": map[string]any{},
			"description": "from thehive4py", "flag": false, "metrics": map[string]any{}, "name": "h4-template", "pap": 2, "severity": 2,
			"tags": []string{"TheHive4Py"}, "tasks": []any{caseTask("Template task", "Waiting", false, nil, nil)}, "titlePrefix": "[H4]", "tlp": 2}))),
			201, object([]string{"id", "name", "tasks"}, nil)},
		{"find_case_templates", dyn("POST", s("/api/case/template/_search?range=all"), s(`{"query": {}}`)), 200, list(1, nil)},
		{"get_case_template (v4)", dyn("POST", s("/api/case/template/_search"), s(`{"query": {"_field": "name", "_value": "h4-template"}}`)),
			200, list(1, first(field("titlePrefix", "[H4]")))},
		{"get_case_template (v3)", dyn("POST", s("/api/case/template/_search"),
			s(`{"query": {"_and": [{"_field": "name", "_value": "h4-template"}, {"_field": "status", "_value": "Ok"}]}}`)),
			200, list(1, first(field("name", "h4-template")))},
		{"get_case_template (v3, another status: none)", dyn("POST", s("/api/case/template/_search"),
			s(`{"query": {"_and": [{"_field": "name", "_value": "h4-template"}, {"status": "Deleted"}]}}`)), 200, list(0, nil)},

		// Alerts.
		{"create_alert", dyn("POST", s("/api/alert"), s(jsonOf(map[string]any{
			"artifacts": []any{
				map[string]any{"data": "198.51.100.7", "dataType": "ip", "ioc": false, "message": nil, "sighted": false, "tags": []string{}, "tlp": 2},
				map[string]any{"data": "alert.txt;text/plain;YW4gYWxlcnQgZmlsZQo=", "dataType": "file", "ioc": false, "message": nil,
					"sighted": false, "tags": []string{}, "tlp": 2}},
			"caseTemplate": nil, "customFields": map[string]any{}, "date": start, "description": "N/A", "externalLink": nil, "pap": 2,
			"severity": 2, "source": "instance1", "sourceRef": "alert-ref-1", "tags": []string{"TheHive4Py"}, "title": "New Alert",
			"tlp": 3, "type": "external"}))), 201,
			object([]string{"id", "status", "artifacts"}, func(t *testing.T, m obj) { id(&alertID)(t, m); field("status", "New")(t, m) })},
		{"create_alert (v3)", dyn("POST", s("/api/alert"), s(jsonOf(map[string]any{"artifacts": []any{}, "caseTemplate": nil,
			"customFields": map[string]any{}, "date": start, "description": "N/A", "severity": 2, "source": "instance1", "sourceRef": "alert-ref-2",
			"tags": []string{}, "title": "Another Alert", "tlp": 2, "type": "external"}))), 201, object([]string{"id"}, id(&alert2ID))},
		{"get_alert", dyn("GET", p("/api/alert/%s", &alertID), nil), 200, object([]string{"id", "title", "artifacts"}, field("title", "New Alert"))},
		{"get_alert (similar cases)", dyn("GET", p("/api/alert/%s?similarity=1", &alertID), nil), 200, object([]string{"id", "similarCases"}, nil)},
		{"find_alerts", dyn("POST", s("/api/alert/_search?range=all"), s(`{"query": {"_field": "sourceRef", "_value": "alert-ref-1"}}`)), 200, list(1, nil)},
		// update_alert(alert_id, alert): every update key the Alert holds (tlp, pap, severity, tags, caseTemplate, title,
		// description, customFields, artifacts as dicts).
		{"update_alert (every update key)", dyn("PATCH", p("/api/alert/%s", &alertID), s(`{"tlp": 2, "pap": 2, "severity": 3, `+
			`"tags": ["TheHive4Py", "updated"], "caseTemplate": null, "title": "New Alert", "description": "updated", "customFields": {}, `+
			`"artifacts": [{"dataType": "ip", "message": null, "tlp": 2, "tags": [], "ioc": false, "sighted": false, "data": "198.51.100.7"}]}`)),
			200, object([]string{"id"}, field("severity", 3))},
		{"update_alert (fields)", dyn("PATCH", p("/api/alert/%s", &alertID), s(`{"tlp": 1}`)), 200, object([]string{"id"}, field("tlp", 1))},
		{"mark_alert_as_read", func() h4Req {
			return h4Req{method: "POST", path: "/api/alert/" + alertID + "/markAsRead", jsonType: true}
		},
			200, object([]string{"id", "status"}, field("status", "Ignored"))},
		{"mark_alert_as_unread", func() h4Req {
			return h4Req{method: "POST", path: "/api/alert/" + alertID + "/markAsUnread", jsonType: true}
		},
			200, object([]string{"id", "status"}, field("status", "New"))},
		{"create_alert_artifact", dyn("POST", p("/api/alert/%s/artifact", &alertID),
			s(`{"data": "alert.example", "dataType": "domain", "ioc": false, "message": null, "sighted": false, "tags": [], "tlp": 2}`)),
			201, list(1, first(id(&alertArtID)))},
		{"create_alert_artifact (file)", func() h4Req {
			return h4Req{method: "POST", path: "/api/alert/" + alertID + "/artifact", form: &h4Form{
				json: `{"dataType": "file", "message": null, "tlp": 2, "tags": [], "ioc": false, "sighted": false}`,
				name: "second.txt", contentType: "text/plain", content: []byte("a second alert file\n")}}
		}, 201, list(1, nil)},
		{"update_alert_artifact", dyn("PATCH", p("/api/alert/artifact/%s", &alertArtID), s(`{"ioc": true}`)), 200, object([]string{"id"}, field("ioc", true))},
		{"delete_alert_artifact", dyn("DELETE", p("/api/alert/artifact/%s", &alertArtID), nil), 204, nil},
		{"promote_alert_to_case", dyn("POST", p("/api/alert/%s/createCase", &alertID), s(`{"caseTemplate": null}`)), 201,
			object(h4Case, func(t *testing.T, m obj) { id(&promoted)(t, m); field("title", "New Alert")(t, m) })},
		{"merge_alert_into_case", dyn("POST", p("/api/alert/%s/merge/%s", &alert2ID, &caseID), s(`{}`)), 200,
			object(h4Case, func(t *testing.T, m obj) { field("id", caseID)(t, m) })},
		{"delete_alert", dyn("DELETE", p("/api/alert/%s?force=1", &alert2ID), nil), 204, nil},

		// The connector.
		{"run_analyzer", dyn("POST", s("/api/connector/cortex/job"), func() string {
			return jsonOf(map[string]any{"cortexId": "down", "artifactId": obsID, "analyzerId": "Echo_1_0"})
		}), 201, object([]string{"id", "status", "cortexId", "analyzerId"}, field("status", "Waiting"))},

		// Not served: their requests, answered 404.
		{"export_to_misp", dyn("POST", p("/api/connector/misp/export/%s/misp1", &caseID), s(`{}`)), 404, nil},
		{"create_custom_field", dyn("POST", s("/api/list/custom_fields/_exists"), s(`{"key": "reference", "value": "h4field"}`)), 404, nil},

		// Deletions last.
		{"delete_case_task", dyn("PATCH", p("/api/case/task/%s", &taskID), s(`{"status": "Cancel"}`)), 200, object([]string{"id"}, field("status", "Cancel"))},
		{"delete_case_observable", dyn("DELETE", p("/api/case/artifact/%s", &obsID), nil), 204, nil},
		{"delete_case", dyn("DELETE", p("/api/case/%s", &promoted), nil), 204, nil},
		{"delete_case (force)", dyn("DELETE", p("/api/case/%s/force", &helperCaseID), nil), 204, nil},
	}
	for _, st := range steps {
		ok := t.Run(st.method, func(t *testing.T) {
			r := st.req().send(t, api)
			if r.Status != st.status {
				t.Fatalf("%s %s: status %d, want %d; body %s", r.Method, r.Path, r.Status, st.status, r.Body)
			}
			if r.Status >= 400 {
				r.CheckErrorShape(t)
			}
			if st.check != nil {
				st.check(t, r)
			}
		})
		if !ok {
			return // the later steps use what this one made
		}
	}
	// What the deletions did.
	tm.orgAdmin.Call(t, http.MethodGet, "/api/case/"+promoted, nil).WantError(t, http.StatusNotFound, "NotFoundError")
	tm.orgAdmin.Call(t, http.MethodGet, "/api/alert/"+alert2ID, nil).WantError(t, http.StatusNotFound, "NotFoundError")
	if l := tm.orgAdmin.Call(t, http.MethodGet, "/api/case/"+caseID+"/artifact", nil).Want(t, http.StatusOK).List(t); slices.ContainsFunc(l,
		func(o obj) bool { return o["id"] == obsID }) {
		t.Errorf("observable %s still in the case", obsID)
	}
}
