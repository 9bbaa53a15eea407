package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// runs counts, per value of parameters.n, how often the test analyzer ran: queue tests check exactly-once.
var runs sync.Map

// testDefinitions are in-process workers whose behaviour the job's parameters steer: sleep (ms, honouring
// cancellation), fail (a failure message), n (counted in runs), defer (the first runs of its n, up to this
// number, end with analysis.DeferError, as the kubernetes runner's on a quota refusal), gate (held until the
// test opens it, see fair_test.go), artifact (echo the data as an ip artifact). The test responder honours
// gate too.
func testDefinitions() []analysis.Definition {
	echo := func(ctx context.Context, in analysis.RunInput) (analysis.RunOutput, error) {
		if n, ok := in.Parameters["n"]; ok {
			c, _ := runs.LoadOrStore(fmt.Sprint(n), new(atomic.Int64))
			count := c.(*atomic.Int64).Add(1)
			if d, ok := in.Parameters["defer"].(json.Number); ok {
				if limit, _ := d.Int64(); count <= limit {
					return analysis.RunOutput{}, &analysis.DeferError{Reason: "no room for the test's job"}
				}
			}
		}
		if name, ok := in.Parameters["gate"].(string); ok { // fair_test.go: held until the test opens the gate
			group, _ := in.Parameters["group"].(string)
			if !passGate(ctx, name, group) {
				return analysis.RunOutput{ErrorMessage: "interrupted"}, nil
			}
		}
		if n, ok := in.Parameters["sleep"].(json.Number); ok { // numbers arrive as written
			ms, _ := n.Float64()
			select {
			case <-ctx.Done():
				return analysis.RunOutput{ErrorMessage: "interrupted"}, nil
			case <-time.After(time.Duration(ms) * time.Millisecond):
			}
		}
		if msg, ok := in.Parameters["fail"].(string); ok {
			return analysis.RunOutput{ErrorMessage: msg, Input: "{}"}, nil
		}
		full := map[string]any{"data": in.Data, "dataType": in.DataType, "filename": in.Filename, "config": in.Config,
			"text": "contacted 198.51.100.7 and evil.example.org"}
		out := analysis.RunOutput{Success: true, Full: full,
			Summary: map[string]any{"taxonomies": []any{map[string]any{"level": "info", "namespace": "Test", "predicate": "Echo", "value": "ok"}}}}
		if v, ok := in.Parameters["artifact"].(string); ok {
			out.Artifacts = append(out.Artifacts, analysis.OutputArtifact{DataType: "ip", Data: v, Tags: []string{"t"}},
				analysis.OutputArtifact{DataType: "ip", Data: v})
		}
		return out, nil
	}
	responder := func(ctx context.Context, in analysis.RunInput) (analysis.RunOutput, error) {
		if name, ok := in.Parameters["gate"].(string); ok && !passGate(ctx, name, "") {
			return analysis.RunOutput{ErrorMessage: "interrupted"}, nil
		}
		return analysis.RunOutput{Success: true, Full: map[string]any{"ok": true},
			Operations: []map[string]any{{"type": "AddTagToCase", "tag": "done"}}}, nil
	}
	return []analysis.Definition{
		{ID: "Test_Echo_1_0", Kind: analysis.KindAnalyzer, Name: "Test_Echo", Version: "1.0", Description: "echo",
			DataTypeList: []string{"ip", "domain", "file"}, BaseConfig: "Test", Builtin: echo,
			ConfigurationItems: []analysis.ConfigItem{
				{Name: "level", Type: "string", DefaultValue: "info"},
				{Name: "lists", Type: "string", Multi: true},
			}},
		{ID: "Test_Keyed_1_0", Kind: analysis.KindAnalyzer, Name: "Test_Keyed", Version: "1.0", Description: "needs a key",
			DataTypeList: []string{"ip"}, Builtin: echo,
			ConfigurationItems: []analysis.ConfigItem{{Name: "key", Type: "string", Required: true}}},
		{ID: "Test_Responder_1_0", Kind: analysis.KindResponder, Name: "Test_Responder", Version: "1.0",
			Description: "tags", DataTypeList: []string{"thehive:case"}, Builtin: responder},
	}
}

// jobFixture is an org with an orgadmin, an analyze user, a read user, and Test_Echo enabled.
type jobFixture struct {
	e                     *env
	admin, analyst, reads *client
	other                 *client // analyze user of another organization
	analyzer              string  // id of the enabled Test_Echo
}

func newJobFixture(t *testing.T, opts ...envOption) *jobFixture {
	t.Helper()
	e := newEnv(t, opts...)
	e.createOrg(t, "soc")
	e.createOrg(t, "other")
	f := &jobFixture{e: e,
		admin:   e.user(t, "soc-admin", "soc", roleOrgAdmin),
		analyst: e.user(t, "soc-analyst", "soc", roleAnalyze),
		reads:   e.user(t, "soc-reader", "soc", roleRead),
		other:   e.user(t, "other-analyst", "other", roleAnalyze),
	}
	f.analyzer = f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0", map[string]any{}).
		Want(t, http.StatusCreated).Object(t)["id"].(string)
	return f
}

func (f *jobFixture) run(t *testing.T, as *client, body map[string]any) map[string]any {
	t.Helper()
	return as.Call(t, http.MethodPost, "/api/analyzer/"+f.analyzer+"/run", body).Want(t, http.StatusOK).Object(t)
}

// wait long-polls a job's report until it finished (the server caps each poll; the test's deadline is 30 s).
func (f *jobFixture) wait(t *testing.T, as *client, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		j := as.Call(t, http.MethodGet, "/api/job/"+id+"/waitreport?atMost=10seconds", nil).Want(t, http.StatusOK).Object(t)
		if st := j["status"]; st != "Waiting" && st != "InProgress" {
			return j
		}
	}
	t.Fatalf("job %s did not finish within 30 s", id)
	return nil
}

func TestAnalyzers_EnableListUpdateDisable(t *testing.T) {
	f := newJobFixture(t)
	t.Run("definitions", func(t *testing.T) {
		defs := f.admin.Call(t, http.MethodGet, "/api/analyzerdefinition", nil).Want(t, http.StatusOK).List(t)
		if len(defs) != 2 || defs[0]["id"] != "Test_Echo_1_0" || defs[0]["configurationItems"] == nil {
			t.Fatalf("definitions %v", defs)
		}
		f.e.super.Call(t, http.MethodGet, "/api/analyzerdefinition", nil).Want(t, http.StatusOK)
		f.analyst.Call(t, http.MethodGet, "/api/analyzerdefinition", nil).WantError(t, http.StatusForbidden, "AuthorizationError")
		rdefs := f.admin.Call(t, http.MethodGet, "/api/responderdefinition", nil).Want(t, http.StatusOK).List(t)
		if len(rdefs) != 1 || rdefs[0]["id"] != "Test_Responder_1_0" {
			t.Fatalf("responder definitions %v", rdefs)
		}
	})
	t.Run("enable refusals", func(t *testing.T) {
		f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0", map[string]any{}).
			WantError(t, http.StatusBadRequest, "CreateError")
		f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Nope_1_0", map[string]any{}).
			WantError(t, http.StatusNotFound, "NotFoundError")
		f.analyst.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0", map[string]any{"name": "x"}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
		f.e.anon().Call(t, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0", map[string]any{"name": "x"}).
			WantError(t, http.StatusUnauthorized, "AuthenticationError")
		for name, conf := range map[string]map[string]any{
			"unknown item":  {"nope": 1},
			"wrong type":    {"level": 3},
			"multi not arr": {"lists": "a"},
			"check_tlp":     {"check_tlp": "yes"},
		} {
			t.Run(name, func(t *testing.T) {
				f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0",
					map[string]any{"name": "Echo " + name, "configuration": conf}).WantError(t, http.StatusBadRequest, "AttributeCheckingError")
			})
		}
		f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Keyed_1_0", map[string]any{}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0", map[string]any{"name": "r", "rate": 1, "rateUnit": "Week"}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError")
	})
	var keyed string
	t.Run("enable with configuration", func(t *testing.T) {
		w := f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Keyed_1_0",
			map[string]any{"name": "Keyed", "configuration": map[string]any{"key": "s3cr3t", "check_tlp": true, "max_tlp": 1},
				"rate": 10, "rateUnit": "Day", "jobCache": 5}).Want(t, http.StatusCreated).Object(t)
		keyed = w["id"].(string)
		conf := w["configuration"].(map[string]any)
		if w["name"] != "Keyed" || w["analyzerDefinitionId"] != "Test_Keyed_1_0" || conf["key"] != "s3cr3t" ||
			conf["check_pap"] != false || conf["max_pap"] != float64(2) || w["rate"] != float64(10) || w["rateUnit"] != "Day" ||
			w["jobCache"] != float64(5) || w["createdBy"] != "soc-admin" {
			t.Fatalf("enabled %v", w)
		}
	})
	t.Run("list and get", func(t *testing.T) {
		r := f.admin.Call(t, http.MethodGet, "/api/analyzer", nil).Want(t, http.StatusOK)
		if r.Header.Get("X-Total") != "2" || len(r.List(t)) != 2 {
			t.Fatalf("list %s %s", r.Header.Get("X-Total"), r.Body)
		}
		for _, w := range f.analyst.Call(t, http.MethodGet, "/api/analyzer", nil).Want(t, http.StatusOK).List(t) {
			if _, ok := w["configuration"]; ok {
				t.Fatalf("an analyze user sees configuration: %v", w)
			}
		}
		if _, ok := f.analyst.Call(t, http.MethodGet, "/api/analyzer/"+keyed, nil).Want(t, http.StatusOK).Object(t)["configuration"]; ok {
			t.Fatal("an analyze user sees configuration")
		}
		if _, ok := f.admin.Call(t, http.MethodGet, "/api/analyzer/"+keyed, nil).Want(t, http.StatusOK).Object(t)["configuration"]; !ok {
			t.Fatal("an orgadmin does not see configuration")
		}
		f.reads.Call(t, http.MethodGet, "/api/analyzer", nil).WantError(t, http.StatusForbidden, "AuthorizationError")
		f.other.Call(t, http.MethodGet, "/api/analyzer/"+keyed, nil).WantError(t, http.StatusNotFound, "NotFoundError")
		if n := len(f.other.Call(t, http.MethodGet, "/api/analyzer", nil).Want(t, http.StatusOK).List(t)); n != 0 {
			t.Fatalf("other org lists %d analyzers", n)
		}
		found := f.admin.Call(t, http.MethodPost, "/api/analyzer/_search", map[string]any{"query": map[string]any{"name": "Keyed"}}).
			Want(t, http.StatusOK).IDs(t)
		if len(found) != 1 || found[0] != keyed {
			t.Fatalf("search %v", found)
		}
		byType := f.admin.Call(t, http.MethodGet, "/api/analyzer/type/domain", nil).Want(t, http.StatusOK).List(t)
		if len(byType) != 1 || byType[0]["id"] != f.analyzer {
			t.Fatalf("type domain %v", byType)
		}
		for _, w := range f.admin.Call(t, http.MethodGet, "/api/analyzer/type/ip", nil).Want(t, http.StatusOK).List(t) {
			if _, ok := w["configuration"]; ok {
				t.Fatal("type listing shows configuration")
			}
		}
	})
	t.Run("update", func(t *testing.T) {
		w := f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+keyed,
			map[string]any{"jobCache": nil, "rate": 3, "name": "Keyed2"}).Want(t, http.StatusOK).Object(t)
		if w["jobCache"] != nil || w["rate"] != float64(3) || w["name"] != "Keyed2" || w["updatedBy"] != "soc-admin" {
			t.Fatalf("updated %v", w)
		}
		f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+keyed, map[string]any{"configuration": map[string]any{"key": nil}}).
			WantError(t, http.StatusBadRequest, "AttributeCheckingError") // key is required
		f.analyst.Call(t, http.MethodPatch, "/api/analyzer/"+keyed, map[string]any{"rate": 1}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
		f.other.Call(t, http.MethodPatch, "/api/analyzer/"+keyed, map[string]any{"rate": 1}).
			WantError(t, http.StatusForbidden, "AuthorizationError")
		got := f.admin.Call(t, http.MethodGet, "/api/analyzer/"+keyed, nil).Want(t, http.StatusOK).Object(t)
		if got["rate"] != float64(3) || got["configuration"].(map[string]any)["key"] != "s3cr3t" {
			t.Fatalf("after refused updates %v", got)
		}
	})
	t.Run("disable", func(t *testing.T) {
		f.analyst.Call(t, http.MethodDelete, "/api/analyzer/"+keyed, nil).WantError(t, http.StatusForbidden, "AuthorizationError")
		f.admin.Call(t, http.MethodDelete, "/api/analyzer/"+keyed, nil).Want(t, http.StatusNoContent)
		f.admin.Call(t, http.MethodGet, "/api/analyzer/"+keyed, nil).WantError(t, http.StatusNotFound, "NotFoundError")
		f.analyst.Call(t, http.MethodPost, "/api/analyzer/"+keyed+"/run", map[string]any{"dataType": "ip", "data": "1.2.3.4"}).
			WantError(t, http.StatusNotFound, "NotFoundError")
	})
}

// PATCH replaces the configuration whole, except the credentials it omits (items named like a key, password
// or secret, marked secret, or a proxy), which keep their stored value: a client (the web interface's edit
// form) can send the configuration without knowing them. Sent, a credential is replaced; sent as null, it is
// removed, and a required one is refused with nothing changed.
func TestAnalyzers_UpdateKeepsOmittedSecrets(t *testing.T) {
	f := newJobFixture(t)
	w := f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Keyed_1_0", map[string]any{"name": "Keyed",
		"configuration": map[string]any{"key": "s3cr3t", "proxy_http": "http://u:pw@proxy.example:3128", "check_tlp": true, "max_tlp": 1}}).
		Want(t, http.StatusCreated).Object(t)
	id := w["id"].(string)
	conf := func(w map[string]any) map[string]any { return w["configuration"].(map[string]any) }

	got := conf(f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+id, map[string]any{"configuration": map[string]any{"max_tlp": 3}}).
		Want(t, http.StatusOK).Object(t))
	if got["key"] != "s3cr3t" || got["proxy_http"] != "http://u:pw@proxy.example:3128" || got["max_tlp"] != float64(3) || got["check_tlp"] != false {
		t.Errorf("after an update omitting the credentials: %v", got)
	}
	got = conf(f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+id, map[string]any{"configuration": map[string]any{"key": "n3w", "proxy_http": nil}}).
		Want(t, http.StatusOK).Object(t))
	if got["key"] != "n3w" || got["proxy_http"] != nil || got["max_tlp"] != float64(2) {
		t.Errorf("after an update replacing the key and removing the proxy: %v", got)
	}
	f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+id, map[string]any{"configuration": map[string]any{"key": nil, "max_tlp": 0}}).
		WantError(t, http.StatusBadRequest, "AttributeCheckingError")
	if got = conf(f.admin.Call(t, http.MethodGet, "/api/analyzer/"+id, nil).Want(t, http.StatusOK).Object(t)); got["key"] != "n3w" || got["max_tlp"] != float64(2) {
		t.Errorf("a refused update changed the configuration: %v", got)
	}
	// The kept credential is the one jobs run with.
	j := f.analyst.Call(t, http.MethodPost, "/api/analyzer/"+id+"/run", map[string]any{"dataType": "ip", "data": "192.0.2.1"}).Want(t, http.StatusOK).Object(t)
	done := f.wait(t, f.analyst, j["id"].(string))
	if cfg, _ := done["report"].(map[string]any)["full"].(map[string]any)["config"].(map[string]any); cfg["key"] != "REMOVED" {
		t.Errorf("the job did not run with the kept key (removed from its report): %v", done)
	}
}

func TestJobs_RunValueAndReport(t *testing.T) {
	f := newJobFixture(t)
	j := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "203.0.113.9", "tlp": 1, "pap": 3,
		"message": "why", "parameters": map[string]any{"artifact": "192.0.2.44"}, "label": "lbl"})
	if j["status"] != "Waiting" || j["analyzerId"] != f.analyzer || j["analyzerName"] != "Test_Echo" ||
		j["analyzerDefinitionId"] != "Test_Echo_1_0" || j["dataType"] != "ip" || j["data"] != "203.0.113.9" ||
		j["tlp"] != float64(1) || j["pap"] != float64(3) || j["message"] != "why" || j["organization"] != "soc" ||
		j["createdBy"] != "soc-analyst" || j["parameters"] != `{"artifact":"192.0.2.44"}` || j["date"] == nil {
		t.Fatalf("job %v", j)
	}
	id := j["id"].(string)
	done := f.wait(t, f.analyst, id)
	if done["status"] != "Success" || done["startDate"] == nil || done["endDate"] == nil {
		t.Fatalf("finished %v", done)
	}
	rep := done["report"].(map[string]any)
	if rep["success"] != true || rep["full"].(map[string]any)["data"] != "203.0.113.9" ||
		len(rep["summary"].(map[string]any)["taxonomies"].([]any)) != 1 {
		t.Fatalf("report %v", rep)
	}
	arts := rep["artifacts"].([]any)
	if len(arts) != 1 || arts[0].(map[string]any)["data"] != "192.0.2.44" { // the duplicate is merged
		t.Fatalf("artifacts %v", arts)
	}
	// The plain job, the report, the artifacts listing, for a read-only user of the organization.
	plain := f.reads.Call(t, http.MethodGet, "/api/job/"+id, nil).Want(t, http.StatusOK).Object(t)
	if _, ok := plain["report"]; ok || plain["status"] != "Success" {
		t.Fatalf("plain job %v", plain)
	}
	f.reads.Call(t, http.MethodGet, "/api/job/"+id+"/report", nil).Want(t, http.StatusOK)
	r := f.reads.Call(t, http.MethodGet, "/api/job/"+id+"/artifacts", nil).Want(t, http.StatusOK)
	if r.Header.Get("X-Total") != "1" || r.List(t)[0]["dataType"] != "ip" || r.List(t)[0]["createdBy"] != "soc-analyst" {
		t.Fatalf("artifacts %s", r.Body)
	}
	// Other organizations and the superadmin see nothing.
	f.other.Call(t, http.MethodGet, "/api/job/"+id, nil).WantError(t, http.StatusNotFound, "NotFoundError")
	f.other.Call(t, http.MethodGet, "/api/job/"+id+"/waitreport", nil).WantError(t, http.StatusNotFound, "NotFoundError")
	f.e.super.Call(t, http.MethodGet, "/api/job/"+id, nil).WantError(t, http.StatusForbidden, "AuthorizationError")
	f.e.anon().Call(t, http.MethodGet, "/api/job/"+id, nil).WantError(t, http.StatusUnauthorized, "AuthenticationError")
	f.analyst.Call(t, http.MethodGet, "/api/job/nope", nil).WantError(t, http.StatusNotFound, "NotFoundError")
}

func TestJobs_RunRefusals(t *testing.T) {
	f := newJobFixture(t)
	path := "/api/analyzer/" + f.analyzer + "/run"
	for name, body := range map[string]map[string]any{
		"no data":          {"dataType": "ip"},
		"empty data":       {"dataType": "ip", "data": ""},
		"tlp out of range": {"dataType": "ip", "data": "1.2.3.4", "tlp": 4},
		"pap negative":     {"dataType": "ip", "data": "1.2.3.4", "pap": -1},
		"no dataType":      {"data": "1.2.3.4"},
		"data not string":  {"dataType": "ip", "data": map[string]any{"a": 1}},
	} {
		t.Run(name, func(t *testing.T) {
			f.analyst.Call(t, http.MethodPost, path, body).WantError(t, http.StatusBadRequest, "AttributeCheckingError")
		})
	}
	f.analyst.Call(t, http.MethodPost, path, map[string]any{"dataType": "url", "data": "http://x"}).
		WantError(t, http.StatusBadRequest, "BadRequest")
	f.reads.Call(t, http.MethodPost, path, map[string]any{"dataType": "ip", "data": "1.2.3.4"}).
		WantError(t, http.StatusForbidden, "AuthorizationError")
	f.other.Call(t, http.MethodPost, path, map[string]any{"dataType": "ip", "data": "1.2.3.4"}).
		WantError(t, http.StatusNotFound, "NotFoundError")
	f.analyst.Call(t, http.MethodPost, "/api/analyzer/unknown/run", map[string]any{"dataType": "ip", "data": "1.2.3.4"}).
		WantError(t, http.StatusNotFound, "NotFoundError")
	f.analyst.Raw(t, http.MethodPost, path, "application/json", `{"dataType":`).WantError(t, http.StatusBadRequest, "BadRequest")
	if n := f.analyst.Call(t, http.MethodPost, "/api/job/_search", map[string]any{}).Want(t, http.StatusOK).Header.Get("X-Total"); n != "0" {
		t.Fatalf("refused runs created %s jobs", n)
	}
}

// The form and query-string encodings of a run are equivalent to JSON (spec §1), force comes as ?force=1.
func TestJobs_FormEncodingCacheAndForce(t *testing.T) {
	f := newJobFixture(t)
	path := "/api/analyzer/" + f.analyzer + "/run"
	first := f.analyst.Raw(t, http.MethodPost, path, "application/x-www-form-urlencoded",
		"dataType=domain&data=example.org&tlp=2&parameters=%7B%22x%22%3A1%7D").Want(t, http.StatusOK).Object(t)
	if first["parameters"] != `{"x":1}` || first["tlp"] != float64(2) {
		t.Fatalf("form run %v", first)
	}
	f.wait(t, f.analyst, first["id"].(string))
	hit := f.run(t, f.analyst, map[string]any{"dataType": "domain", "data": "example.org", "parameters": map[string]any{"x": 1}})
	if hit["id"] != first["id"] || hit["fromCache"] != true {
		t.Fatalf("cache miss: %v", hit)
	}
	other := f.run(t, f.analyst, map[string]any{"dataType": "domain", "data": "example.org", "tlp": 3, "parameters": map[string]any{"x": 1}})
	if other["id"] == first["id"] {
		t.Fatal("a different TLP hit the cache")
	}
	forced := f.analyst.Call(t, http.MethodPost, path+"?force=1",
		map[string]any{"dataType": "domain", "data": "example.org", "parameters": map[string]any{"x": 1}}).Want(t, http.StatusOK).Object(t)
	if forced["id"] == first["id"] || forced["fromCache"] == true {
		t.Fatalf("force did not bypass the cache: %v", forced)
	}
	// A failed job is never served from the cache.
	failed := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "1.1.1.1", "parameters": map[string]any{"fail": "boom"}})
	fr := f.wait(t, f.analyst, failed["id"].(string))
	if fr["status"] != "Failure" || fr["report"].(map[string]any)["errorMessage"] != "boom" || fr["report"].(map[string]any)["success"] != false {
		t.Fatalf("failure %v", fr)
	}
	again := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": "1.1.1.1", "parameters": map[string]any{"fail": "boom"}})
	if again["id"] == failed["id"] {
		t.Fatal("a failed job came from the cache")
	}
	// jobCache 0 turns the cache off.
	f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+f.analyzer, map[string]any{"jobCache": 0}).Want(t, http.StatusOK)
	off := f.run(t, f.analyst, map[string]any{"dataType": "domain", "data": "example.org", "parameters": map[string]any{"x": 1}})
	if off["id"] == first["id"] || off["id"] == forced["id"] {
		t.Fatal("jobCache 0 still served from the cache")
	}
}

func TestJobs_RateLimit(t *testing.T) {
	f := newJobFixture(t, withoutWorkers())
	f.admin.Call(t, http.MethodPatch, "/api/analyzer/"+f.analyzer, map[string]any{"rate": 2, "rateUnit": "Day", "jobCache": 0}).
		Want(t, http.StatusOK)
	for i := range 2 {
		f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": fmt.Sprintf("10.0.0.%d", i)})
	}
	msg := f.analyst.Call(t, http.MethodPost, "/api/analyzer/"+f.analyzer+"/run", map[string]any{"dataType": "ip", "data": "10.0.0.9"}).
		WantError(t, http.StatusTooManyRequests, "RateLimitExceeded")
	if !strings.Contains(msg, "Rate limit of 2 per Day") {
		t.Fatalf("message %q", msg)
	}
	if n := f.analyst.Call(t, http.MethodGet, "/api/job", nil).Want(t, http.StatusOK).Header.Get("X-Total"); n != "2" {
		t.Fatalf("jobs after the refusal: %s", n)
	}
}

// With check_tlp and a TLP above max_tlp the job fails at once and the analyzer never runs.
func TestJobs_TLPAboveMaximum(t *testing.T) {
	f := newJobFixture(t)
	w := f.admin.Call(t, http.MethodPost, "/api/organization/analyzer/Test_Echo_1_0",
		map[string]any{"name": "Careful", "configuration": map[string]any{"check_tlp": true, "max_tlp": 1, "check_pap": true, "max_pap": 2}}).
		Want(t, http.StatusCreated).Object(t)
	path := "/api/analyzer/" + w["id"].(string) + "/run"
	j := f.analyst.Call(t, http.MethodPost, path, map[string]any{"dataType": "ip", "data": "8.8.8.8", "tlp": 2, "parameters": map[string]any{"n": "tlp-check"}}).
		Want(t, http.StatusOK).Object(t)
	if j["status"] != "Failure" || j["errorMessage"] != "TLP is higher than allowed." {
		t.Fatalf("job %v", j)
	}
	rep := f.analyst.Call(t, http.MethodGet, "/api/job/"+j["id"].(string)+"/report", nil).Want(t, http.StatusOK).Object(t)["report"].(map[string]any)
	if rep["success"] != false || rep["errorMessage"] != "TLP is higher than allowed." {
		t.Fatalf("report %v", rep)
	}
	if _, ran := runs.Load("tlp-check"); ran {
		t.Fatal("the analyzer ran")
	}
	p := f.analyst.Call(t, http.MethodPost, path, map[string]any{"dataType": "ip", "data": "8.8.8.8", "tlp": 0, "pap": 3}).
		Want(t, http.StatusOK).Object(t)
	if p["status"] != "Failure" || p["errorMessage"] != "PAP is higher than allowed." {
		t.Fatalf("pap job %v", p)
	}
	ok := f.analyst.Call(t, http.MethodPost, path, map[string]any{"dataType": "ip", "data": "8.8.8.8", "tlp": 1}).Want(t, http.StatusOK).Object(t)
	if f.wait(t, f.analyst, ok["id"].(string))["status"] != "Success" {
		t.Fatal("a job within the maximum failed")
	}
}

func multipartRun(t *testing.T, c *client, path, part, filename string, content []byte, js string) *resp {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("_json", js); err != nil {
		t.Fatal(err)
	}
	fw, err := mw.CreateFormFile(part, filename)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(content)
	_ = mw.Close()
	return c.Send(t, http.MethodPost, path, mw.FormDataContentType(), &buf, nil)
}

func TestJobs_FileObservable(t *testing.T) {
	f := newJobFixture(t)
	path := "/api/analyzer/" + f.analyzer + "/run"
	content := []byte("MZ this is a sample with 198.51.100.7 inside")
	for _, part := range []string{"attachment", "data"} {
		t.Run(part, func(t *testing.T) {
			j := multipartRun(t, f.analyst, path+"?force=1", part, "sample.exe", content, `{"dataType":"file","tlp":2}`).
				Want(t, http.StatusOK).Object(t)
			att, _ := j["attachment"].(map[string]any)
			if att == nil || att["name"] != "sample.exe" || att["size"] != float64(len(content)) || len(att["hashes"].([]any)) != 3 {
				t.Fatalf("job %v", j)
			}
			if _, ok := j["data"]; ok {
				t.Fatalf("a file job has data: %v", j)
			}
			done := f.wait(t, f.analyst, j["id"].(string))
			if done["report"].(map[string]any)["full"].(map[string]any)["filename"] != "sample.exe" {
				t.Fatalf("the analyzer did not get the file: %v", done)
			}
			got := f.reads.Call(t, http.MethodGet, "/api/datastore/"+att["id"].(string)+"?name=sample.exe", nil).Want(t, http.StatusOK)
			if !bytes.Equal(got.Body, content) || !strings.Contains(got.Header.Get("Content-Disposition"), "sample.exe") {
				t.Fatalf("download %q %v", got.Body, got.Header)
			}
			f.other.Call(t, http.MethodGet, "/api/datastore/"+att["id"].(string), nil).WantError(t, http.StatusNotFound, "NotFoundError")
		})
	}
	multipartRun(t, f.analyst, path, "attachment", "x.bin", content, `{"dataType":"file","data":"also a value"}`).
		WantError(t, http.StatusBadRequest, "AttributeCheckingError")
	multipartRun(t, f.analyst, path, "attachment", "x.bin", content, `{"dataType":"ip"}`).
		WantError(t, http.StatusBadRequest, "AttributeCheckingError")
}

func TestJobs_SearchDeleteAndWait(t *testing.T) {
	f := newJobFixture(t, withoutWorkers())
	var ids []string
	for i := range 3 {
		ids = append(ids, f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": fmt.Sprintf("10.1.0.%d", i)})["id"].(string))
	}
	t.Run("search", func(t *testing.T) {
		r := f.reads.Call(t, http.MethodPost, "/api/job/_search?range=0-2&sort=%2Bdata", map[string]any{"query": map[string]any{"status": "Waiting"}}).
			Want(t, http.StatusOK)
		if r.Header.Get("X-Total") != "3" || len(r.List(t)) != 2 || r.List(t)[0]["data"] != "10.1.0.0" {
			t.Fatalf("search %s %s", r.Header.Get("X-Total"), r.Body)
		}
		got := f.reads.Call(t, http.MethodGet, "/api/job?dataFilter=10.1.0.2", nil).Want(t, http.StatusOK).IDs(t)
		if len(got) != 1 || got[0] != ids[2] {
			t.Fatalf("dataFilter %v", got)
		}
		if n := f.other.Call(t, http.MethodGet, "/api/job", nil).Want(t, http.StatusOK).Header.Get("X-Total"); n != "0" {
			t.Fatalf("another organization sees %s jobs", n)
		}
		f.reads.Call(t, http.MethodPost, "/api/job/_search", map[string]any{"query": map[string]any{"secret": 1}}).
			WantError(t, http.StatusBadRequest, "BadRequest")
	})
	t.Run("waitreport times out with the current state", func(t *testing.T) {
		j := f.reads.Call(t, http.MethodGet, "/api/job/"+ids[0]+"/waitreport?atMost=100ms", nil).Want(t, http.StatusOK).Object(t)
		if j["report"] != "Waiting" {
			t.Fatalf("report %v", j["report"])
		}
		for _, bad := range []string{"abc", "10parsecs", "-1second", "1.5minute"} {
			f.reads.Call(t, http.MethodGet, "/api/job/"+ids[0]+"/waitreport?atMost="+bad, nil).WantError(t, http.StatusBadRequest, "BadRequest")
		}
	})
	t.Run("delete", func(t *testing.T) {
		f.reads.Call(t, http.MethodDelete, "/api/job/"+ids[1], nil).WantError(t, http.StatusForbidden, "AuthorizationError")
		f.other.Call(t, http.MethodDelete, "/api/job/"+ids[1], nil).WantError(t, http.StatusNotFound, "NotFoundError")
		f.analyst.Call(t, http.MethodDelete, "/api/job/"+ids[1], nil).Want(t, http.StatusNoContent)
		j := f.reads.Call(t, http.MethodGet, "/api/job/"+ids[1]+"/report", nil).Want(t, http.StatusOK).Object(t)
		if j["status"] != "Deleted" || j["report"] != "Deleted" {
			t.Fatalf("deleted job %v", j)
		}
		if n := f.reads.Call(t, http.MethodPost, "/api/job/_search", map[string]any{}).Want(t, http.StatusOK).Header.Get("X-Total"); n != "2" {
			t.Fatalf("search shows %s jobs, want 2 (Deleted hidden)", n)
		}
		del := f.reads.Call(t, http.MethodPost, "/api/job/_search", map[string]any{"query": map[string]any{"status": "Deleted"}}).
			Want(t, http.StatusOK).IDs(t)
		if len(del) != 1 || del[0] != ids[1] {
			t.Fatalf("Deleted jobs %v", del)
		}
	})
	t.Run("a restart runs the waiting jobs", func(t *testing.T) {
		// No worker ran so far: start one now, as a restarted service would.
		startWorkers(t, f.e.jobs)
		for _, id := range []string{ids[0], ids[2]} {
			if st := f.wait(t, f.analyst, id)["status"]; st != "Success" {
				t.Fatalf("job %s: %v", id, st)
			}
		}
		if st := f.reads.Call(t, http.MethodGet, "/api/job/"+ids[1], nil).Want(t, http.StatusOK).Object(t)["status"]; st != "Deleted" {
			t.Fatalf("the deleted job ran: %v", st)
		}
	})
}

func TestResponders_Run(t *testing.T) {
	f := newJobFixture(t)
	r := f.admin.Call(t, http.MethodPost, "/api/organization/responder/Test_Responder_1_0", map[string]any{}).Want(t, http.StatusCreated).Object(t)
	if r["responderDefinitionId"] != "Test_Responder_1_0" || r["type"] != "responder" {
		t.Fatalf("responder %v", r)
	}
	id := r["id"].(string)
	if n := len(f.analyst.Call(t, http.MethodGet, "/api/responder/type/thehive:case", nil).Want(t, http.StatusOK).List(t)); n != 1 {
		t.Fatalf("responders for cases: %d", n)
	}
	f.analyst.Call(t, http.MethodGet, "/api/analyzer/"+id, nil).WantError(t, http.StatusNotFound, "NotFoundError")
	f.analyst.Call(t, http.MethodPost, "/api/responder/"+id+"/run", map[string]any{"dataType": "thehive:case", "data": "not an object"}).
		WantError(t, http.StatusBadRequest, "AttributeCheckingError")
	j := f.analyst.Call(t, http.MethodPost, "/api/responder/"+id+"/run",
		map[string]any{"dataType": "thehive:case", "data": map[string]any{"_id": "~1", "title": "c"}, "tlp": 2}).
		Want(t, http.StatusOK).Object(t)
	if j["responderId"] != id || j["data"].(map[string]any)["title"] != "c" {
		t.Fatalf("job %v", j)
	}
	done := f.wait(t, f.analyst, j["id"].(string))
	ops := done["report"].(map[string]any)["operations"].([]any)
	if len(ops) != 1 || ops[0].(map[string]any)["type"] != "AddTagToCase" {
		t.Fatalf("operations %v", ops)
	}
}

// A retried POST with the same Idempotency-Key returns the first job instead of creating a second one.
func TestJobs_IdempotencyKey(t *testing.T) {
	f := newJobFixture(t, withoutWorkers())
	path := "/api/analyzer/" + f.analyzer + "/run?force=1"
	body := `{"dataType":"ip","data":"10.7.0.1"}`
	hdr := http.Header{"Idempotency-Key": {"retry-123"}}
	first := f.analyst.Send(t, http.MethodPost, path, "application/json", strings.NewReader(body), hdr).Want(t, http.StatusOK).Object(t)
	again := f.analyst.Send(t, http.MethodPost, path, "application/json", strings.NewReader(body), hdr).Want(t, http.StatusOK).Object(t)
	if first["id"] != again["id"] {
		t.Fatalf("two jobs for one key: %v %v", first["id"], again["id"])
	}
	other := f.analyst.Send(t, http.MethodPost, path, "application/json", strings.NewReader(body),
		http.Header{"Idempotency-Key": {"retry-456"}}).Want(t, http.StatusOK).Object(t)
	if other["id"] == first["id"] {
		t.Fatal("another key returned the same job")
	}
	if n := f.analyst.Call(t, http.MethodGet, "/api/job", nil).Want(t, http.StatusOK).Header.Get("X-Total"); n != "2" {
		t.Fatalf("jobs: %s, want 2", n)
	}
	f.analyst.Send(t, http.MethodPost, path, "application/json", strings.NewReader(body),
		http.Header{"Idempotency-Key": {strings.Repeat("k", 300)}}).WantError(t, http.StatusBadRequest, "BadRequest")
}

// A waitreport waiting when its job ends gets the end as this process stored it, without reading it again:
// the same body GET /api/job/{id}/report gives (numbers, artifacts and all).
func TestJobs_WaitReportHandsOverTheStoredEnd(t *testing.T) {
	f := newJobFixture(t)
	for i := range 3 {
		id := f.run(t, f.analyst, map[string]any{"dataType": "ip", "data": fmt.Sprintf("10.7.0.%d", i),
			"parameters": map[string]any{"sleep": 200, "artifact": "192.0.2.44", "big": 9007199254740993, "f": 1.0}})["id"].(string)
		waited := f.analyst.Call(t, http.MethodGet, "/api/job/"+id+"/waitreport?atMost=30seconds", nil).Want(t, http.StatusOK)
		read := f.analyst.Call(t, http.MethodGet, "/api/job/"+id+"/report", nil).Want(t, http.StatusOK)
		if waited.Object(t)["status"] != "Success" || !bytes.Equal(waited.Body, read.Body) {
			t.Fatalf("waitreport answered\n%s\nthe report reads\n%s", waited.Body, read.Body)
		}
	}
}
