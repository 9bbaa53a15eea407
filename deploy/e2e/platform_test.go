//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
)

// analysisServer is an analysis-svc container plus what the test set up in it through its API: an
// organization whose orgadmin key the connector uses, and the enabled analyzers and responders.
type analysisServer struct {
	*node
	superKey   string            // the bootstrapped superadmin's
	orgKey     string            // the orgadmin's: the connector's key
	analyzers  map[string]string // definition name (Echo…) → id of the enabled analyzer on this server
	responders map[string]string
}

// newAnalysis describes an analysis-svc container; name is also its analysisId in case-svc, alias its host
// name on the test network. extra env is added to the bootstrap settings.
func (s *stack) newAnalysis(name, alias, volume string, extra map[string]string, files []testcontainers.ContainerFile) *analysisServer {
	key := "analysis-root-" + randomHex(16)
	env := map[string]string{
		"ANALYSIS_BOOTSTRAP_LOGIN":                 "root",
		"ANALYSIS_BOOTSTRAP_KEY":                   key,
		"ANALYSIS_HTTP_ALLOW_INSECURE_CREDENTIALS": "true", // plain HTTP on the test network
	}
	for k, v := range extra {
		env[k] = v
	}
	return &analysisServer{node: &node{s: s, name: name, alias: alias, image: analysisImage, port: "9001/tcp",
		env: env, volume: volume, files: files}, superKey: key,
		analyzers: map[string]string{}, responders: map[string]string{}}
}

// worker is an analyzer or responder definition to enable, with its configuration.
type worker struct {
	responder bool
	def       string // definition id, e.g. Echo_1_0
	name      string // its name, e.g. Echo
	conf      map[string]any
}

// provision checks the bootstrapped superadmin, creates the organization org and its orgadmin with a key
// (all through the API, over the mapped port), and enables the workers as that orgadmin.
func (a *analysisServer) provision(t *testing.T, org string, workers ...worker) {
	t.Helper()
	root := a.as(a.superKey)
	me := root.call(t, http.MethodGet, "/api/user/current", nil).want(t, http.StatusOK).object(t)
	if !slices.Contains(me.strs(t, "roles"), "superadmin") {
		t.Fatalf("%s: the bootstrapped user is %v", a.name, me)
	}
	root.call(t, http.MethodPost, "/api/organization", map[string]any{"name": org, "description": "SOC of the container suite"}).
		want(t, http.StatusCreated)
	root.call(t, http.MethodPost, "/api/user", map[string]any{"login": "connector", "name": "case-svc connector",
		"organization": org, "roles": []string{"read", "analyze", "orgadmin"}}).want(t, http.StatusCreated)
	a.orgKey = root.call(t, http.MethodPost, "/api/user/connector/key/renew", nil).want(t, http.StatusOK).text()
	if len(a.orgKey) < 32 {
		t.Fatalf("%s: key %q", a.name, a.orgKey)
	}
	admin := a.as(a.orgKey)
	for _, w := range workers {
		kind, ids := "analyzer", a.analyzers
		if w.responder {
			kind, ids = "responder", a.responders
		}
		conf := w.conf
		if conf == nil {
			conf = map[string]any{}
		}
		en := admin.call(t, http.MethodPost, "/api/organization/"+kind+"/"+w.def, map[string]any{"name": w.name, "configuration": conf}).
			want(t, http.StatusCreated).object(t)
		ids[w.name] = en.str(t, "id")
	}
	a.s.logf("%s: organization %s, orgadmin key, %d analyzers and %d responders enabled", a.name, org, len(a.analyzers), len(a.responders))
}

// remoteJob reads a job on this analysis server, as the connector's orgadmin.
func (a *analysisServer) remoteJob(t testing.TB, id string) obj {
	t.Helper()
	return a.as(a.orgKey).call(t, http.MethodGet, "/api/job/"+id, nil).want(t, http.StatusOK).object(t)
}

// caseServer is the case-svc container.
type caseServer struct {
	*node
	adminKey string
}

// newCase describes the case-svc container, with the connector configured by env to the given servers
// (addressed by their aliases on the test network).
func (s *stack) newCaseSvc(volume string, servers ...*analysisServer) *caseServer {
	key := "case-admin-" + randomHex(16)
	var list []map[string]any
	for _, a := range servers {
		list = append(list, map[string]any{"name": a.name, "url": "http://" + a.alias + ":9001", "key": a.orgKey, "timeout": "30s"})
	}
	env := map[string]string{
		"CASE_BOOTSTRAP_LOGIN":                 "admin",
		"CASE_BOOTSTRAP_KEY":                   key,
		"CASE_HTTP_ALLOW_INSECURE_CREDENTIALS": "true",
		"CASE_ANALYSIS_SERVERS":                mustJSON(list),
	}
	return &caseServer{node: &node{s: s, name: "case", alias: "case-svc", image: caseImage, port: "9000/tcp", env: env, volume: volume},
		adminKey: key}
}

// team is the organisation soc of case-svc and its users, each with an API key.
type team struct {
	admin    apiClient // the bootstrapped platform administrator
	orgAdmin apiClient
	analyst  apiClient
	reader   apiClient
	keys     map[string]string // login → key
}

// provision checks the bootstrapped administrator, then creates the organisation soc and one user per
// profile, each with a key.
func (cs *caseServer) provision(t *testing.T) team {
	t.Helper()
	tm := team{admin: cs.as(cs.adminKey), keys: map[string]string{}}
	me := tm.admin.call(t, http.MethodGet, "/api/user/current", nil).want(t, http.StatusOK).object(t)
	if me.str(t, "login") != "admin" || me.str(t, "profile") != "admin" || me.str(t, "organisation") != "admin" {
		t.Fatalf("bootstrapped administrator %v", me)
	}
	tm.admin.call(t, http.MethodPost, "/api/organisation", map[string]any{"name": "soc", "description": "the SOC"}).want(t, http.StatusCreated)
	user := func(login, profile string) apiClient {
		tm.admin.call(t, http.MethodPost, "/api/user", map[string]any{"login": login, "name": "User " + login,
			"organisation": "soc", "profile": profile}).want(t, http.StatusCreated)
		key := tm.admin.call(t, http.MethodPost, "/api/user/"+login+"/key/renew", nil).want(t, http.StatusOK).text()
		tm.keys[login] = key
		c := cs.as(key)
		u := c.call(t, http.MethodGet, "/api/user/current", nil).want(t, http.StatusOK).object(t)
		if u.str(t, "login") != login || u.str(t, "organisation") != "soc" || u.str(t, "profile") != profile {
			t.Fatalf("user %s: %v", login, u)
		}
		return c
	}
	tm.orgAdmin = user("socadmin", "org-admin")
	tm.analyst = user("ana", "analyst")
	tm.reader = user("reader", "read-only")
	cs.s.logf("case: organisation soc with org-admin, analyst and read-only users (keys)")
	return tm
}

// newCase creates a case as c.
func (c apiClient) newCase(t testing.TB, body map[string]any) obj {
	t.Helper()
	return c.call(t, http.MethodPost, "/api/case", body).want(t, http.StatusCreated).object(t)
}

// observables adds values of one type to a case and returns the created observables.
func (c apiClient) observables(t testing.TB, caseID, dataType string, data ...string) []obj {
	t.Helper()
	l := c.call(t, http.MethodPost, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": dataType, "data": data}).
		want(t, http.StatusCreated).list(t)
	if len(l) != len(data) {
		t.Fatalf("observables %v: got %d", data, len(l))
	}
	return l
}

// runJob starts an analyzer of a server on an observable through the connector.
func (c apiClient) runJob(t testing.TB, server *analysisServer, analyzer, observableID string) obj {
	t.Helper()
	id, ok := server.analyzers[analyzer]
	if !ok {
		t.Fatalf("%s has no analyzer %s enabled", server.name, analyzer)
	}
	j := c.call(t, http.MethodPost, "/api/connector/analysis/job",
		map[string]any{"analysisId": server.name, "artifactId": observableID, "analyzerId": id}).want(t, http.StatusCreated).object(t)
	if j.str(t, "analysisId") != server.name || j.str(t, "analyzerId") != id {
		t.Fatalf("job %v: want analysisId %s, analyzerId %s", j, server.name, id)
	}
	return j
}

func (c apiClient) job(t testing.TB, id string) obj {
	t.Helper()
	return c.call(t, http.MethodGet, "/api/connector/job/"+id, nil).want(t, http.StatusOK).object(t)
}

// waitJob polls a connector job until it has finished, and wants Success with a report.
func (c apiClient) waitJob(t testing.TB, what, id string, timeout time.Duration) obj {
	t.Helper()
	var j obj
	eventually(t, what, timeout, func() (bool, string) {
		j = c.job(t, id)
		st, _ := j["status"].(string)
		return st == "Success" || st == "Failure", fmt.Sprintf("status %v", j["status"])
	})
	if j["status"] != "Success" {
		t.Fatalf("%s: %v", what, j)
	}
	if rep := j.obj(t, "report"); rep["success"] != true {
		t.Fatalf("%s: report %v", what, rep)
	}
	return j
}

// runAction starts a responder of a server on an object (case_task, case_task_log, case, case_artifact).
func (c apiClient) runAction(t testing.TB, server *analysisServer, responder, objectType, objectID string) obj {
	t.Helper()
	id, ok := server.responders[responder]
	if !ok {
		t.Fatalf("%s has no responder %s enabled", server.name, responder)
	}
	a := c.call(t, http.MethodPost, "/api/connector/analysis/action",
		map[string]any{"analysisId": server.name, "responderId": id, "objectType": objectType, "objectId": objectID}).
		want(t, http.StatusCreated).object(t)
	if a.str(t, "analysisId") != server.name {
		t.Fatalf("action %v: want analysisId %s", a, server.name)
	}
	return a
}

// waitAction polls an action until it has finished, and wants Success with every operation applied.
func (c apiClient) waitAction(t testing.TB, what, id string, timeout time.Duration) obj {
	t.Helper()
	var a obj
	eventually(t, what, timeout, func() (bool, string) {
		a = c.call(t, http.MethodGet, "/api/connector/analysis/action/"+id, nil).want(t, http.StatusOK).object(t)
		st, _ := a["status"].(string)
		return st == "Success" || st == "Failure", fmt.Sprintf("status %v", a["status"])
	})
	if a["status"] != "Success" {
		t.Fatalf("%s: %v", what, a)
	}
	var ops []map[string]any
	if err := json.Unmarshal([]byte(a.str(t, "operations")), &ops); err != nil || len(ops) == 0 {
		t.Fatalf("%s: operations %q (%v)", what, a["operations"], err)
	}
	for _, op := range ops {
		if op["status"] != "Success" {
			t.Fatalf("%s: operation %v not applied", what, op)
		}
	}
	return a
}

// tasks returns the titles and statuses of a case's tasks, and the tasks by title.
func (c apiClient) tasks(t testing.TB, caseID string) map[string]obj {
	t.Helper()
	out := map[string]obj{}
	for _, x := range c.call(t, http.MethodGet, "/api/case/"+caseID+"/task?range=all", nil).want(t, http.StatusOK).list(t) {
		out[x.str(t, "title")] = x
	}
	return out
}

// caseObservables returns a case's observables by data (file observables by attachment name).
func (c apiClient) caseObservables(t testing.TB, caseID string) map[string]obj {
	t.Helper()
	out := map[string]obj{}
	for _, o := range c.call(t, http.MethodGet, "/api/case/"+caseID+"/artifact?range=all", nil).want(t, http.StatusOK).list(t) {
		if d, ok := o["data"].(string); ok {
			out[d] = o
		} else if att, ok := o["attachment"].(map[string]any); ok {
			out[fmt.Sprint(att["name"])] = o
		}
	}
	return out
}
