package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/yeka/zip"

	"github.com/openir/platform/case-svc/internal/analysissvc"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/store"
	"github.com/openir/platform/pkg/docstore"
)

// rawDocuments reads every document of a collection of the env's database as plain JSON values, as stored.
func rawDocuments(t *testing.T, e *env, coll string) []map[string]any {
	t.Helper()
	ctx := context.Background()
	c, err := store.Collection(ctx, e.db, coll)
	if err != nil {
		t.Fatalf("open %s: %v", coll, err)
	}
	docs, err := c.FindRaw(ctx, docstore.Query{Filter: docstore.All()})
	if err != nil {
		t.Fatalf("read %s: %v", coll, err)
	}
	out := make([]map[string]any, 0, len(docs))
	for _, d := range docs {
		var m map[string]any
		if err := json.Unmarshal(d, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// databaseText returns every document of every collection as text, by collection.
func databaseText(t *testing.T, e *env) map[string]string {
	t.Helper()
	names, err := e.db.Collections(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		js, _ := json.Marshal(rawDocuments(t, e, n))
		out[n] = string(js)
	}
	return out
}

// Secrets never reach the raw database, the logs or an answer (besides the key routes, which reveal the
// caller's own key by design): users' API keys and passwords, the zip password of an encrypted upload, and the
// key (and URL credentials) of the analysis servers of the configuration.
func TestSecrets_NeverStoredLoggedOrAnswered(t *testing.T) {
	t.Parallel()
	const (
		serverKey   = "analysis-server-key-never-shown-0123456789"
		urlSecret   = "url-password-never-shown-42"
		password1   = "first-password-0123"
		password2   = "second-password-0123"
		zipPassword = "zip-password-never-stored-77"
	)
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	opts := analysissvc.Options{RetryMax: 1, RetryWaitMin: time.Millisecond, RetryWaitMax: 5 * time.Millisecond}
	down := analysissvc.Adapter{Client: analysissvc.New(analysissvc.Server{Name: "down", URL: "http://127.0.0.1:1", Key: serverKey,
		Timeout: 2 * time.Second}, opts, log)}
	creds := analysissvc.Adapter{Client: analysissvc.New(analysissvc.Server{Name: "creds", URL: "http://connector:" + urlSecret + "@127.0.0.1:1",
		Key: serverKey, Timeout: 2 * time.Second}, opts, log)}
	tm := newTeam(t, withLogs(logs), withAdminPassword(),
		withServers(connector.AnalysisConfig{Scan: 100 * time.Millisecond, BackoffLo: 20 * time.Millisecond, BackoffHi: 50 * time.Millisecond}, down, creds))

	var answers []*resp
	keep := func(r *resp) *resp { answers = append(answers, r); return r }

	// Passwords: set at creation, set by an administrator, changed by the user; a session.
	keep(tm.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": "pw", "organisation": "soc", "profile": "analyst",
		"password": password1})).Want(t, 201)
	s := tm.sessionClient()
	keep(s.Call(t, http.MethodPost, "/api/login", map[string]string{"user": "pw", "password": password1})).Want(t, 200)
	s.CSRF = true
	keep(s.Call(t, http.MethodPost, "/api/user/pw/password/change", map[string]string{"currentPassword": password1,
		"password": password2})).Want(t, 204)
	// The change ended every session of pw, the one that made it included.
	keep(s.Call(t, http.MethodPost, "/api/user/pw/password/change", map[string]string{"currentPassword": password1,
		"password": password2})).WantError(t, 401, "AuthenticationError")
	s = tm.sessionClient()
	keep(s.Call(t, http.MethodPost, "/api/login", map[string]string{"user": "pw", "password": password2})).Want(t, 200)
	s.CSRF = true
	keep(s.Call(t, http.MethodPost, "/api/user/pw/password/change", map[string]string{"currentPassword": password1,
		"password": password2})).WantError(t, 403, "AuthorizationError")
	keep(tm.admin.Call(t, http.MethodPost, "/api/user/reader/password/set", map[string]string{"password": password1})).Want(t, 204)
	keep(tm.anon().Call(t, http.MethodPost, "/api/login", map[string]string{"user": "pw", "password": password1})).
		WantError(t, 401, "AuthenticationError")
	keep(tm.basicClient("pw", password2).Call(t, http.MethodGet, "/api/user/current", nil)).WantError(t, 401, "AuthenticationError")

	// Keys: renewed (the old one stops working), revealed to its owner, revoked.
	k1 := tm.renewKey(t, tm.admin, "pw")
	pw := tm.keyClient("pw", k1)
	k2 := pw.Call(t, http.MethodPost, "/api/user/pw/key/renew", nil).Want(t, 200).Text(t)
	keep(tm.keyClient("pw", k1).Call(t, http.MethodGet, "/api/user/current", nil)).WantError(t, 401, "AuthenticationError")
	pw.Key = k2
	keep(pw.Call(t, http.MethodGet, "/api/user/current", nil)).Want(t, 200)
	keep(tm.anon().Call(t, http.MethodGet, "/api/user/current?key="+k2, nil)).WantError(t, 401, "AuthenticationError")
	keep(tm.anon().Call(t, http.MethodGet, "/api/nope?api_key="+k2, nil)).WantError(t, 404, "NotFoundError")
	keys := []string{adminKey, k1, k2, tm.analyst.Key, tm.orgAdmin.Key, tm.readOnly.Key, tm.other.Key}

	// An encrypted archive with its password.
	caseID := tm.analyst.newCase(t, nil).Str(t, "id")
	var archive strings.Builder
	zw := zip.NewWriter(&archive)
	fw, err := zw.Encrypt("secret.bin", zipPassword, zip.AES256Encryption)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte("encrypted content"))
	_ = zw.Close()
	obs := keep(tm.analyst.multipart(t, http.MethodPost, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "file",
		"isZip": true, "zipPassword": zipPassword}, nil, part{"attachment", "s.zip", "application/zip", []byte(archive.String())})).
		Want(t, 201).List(t)
	keep(tm.analyst.multipart(t, http.MethodPost, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "file",
		"isZip": true, "zipPassword": zipPassword + "x"}, nil, part{"attachment", "s.zip", "application/zip", []byte(archive.String())})).
		WantError(t, 400, "BadRequest")

	// The connector, with both servers unreachable: listings, job and responder runs, the status.
	task := keep(tm.analyst.Call(t, http.MethodPost, "/api/case/"+caseID+"/task", map[string]any{"title": "t"})).Want(t, 201).Object(t)
	for _, p := range []string{"/api/connector/analysis/analyzer", "/api/connector/cortex/analyzer/type/file",
		"/api/connector/analysis/responder", "/api/connector/cortex/responder/case_task/" + task.Str(t, "id")} {
		r := keep(tm.analyst.Call(t, http.MethodGet, p, nil)).Want(t, 200)
		if w := r.Header.Get("X-Analysis-Warnings"); !strings.Contains(w, "down") || !strings.Contains(w, "creds") {
			t.Errorf("%s: warnings %q", p, w)
		}
	}
	for _, server := range []string{"down", "creds"} {
		keep(tm.analyst.Call(t, http.MethodPost, "/api/connector/analysis/job", map[string]any{"analysisId": server,
			"artifactId": obs[0].Str(t, "id"), "analyzerId": "File_Info_1_0"})).Want(t, 201) // accepted, Waiting
		keep(tm.analyst.Call(t, http.MethodPost, "/api/connector/cortex/action", map[string]any{"cortexId": server,
			"responderId": "Tagger_1_0", "objectType": "case_task", "objectId": task.Str(t, "id")})).Want(t, 201)
	}
	keep(tm.analyst.Call(t, http.MethodPost, "/api/connector/cortex/action", map[string]any{"responderId": "Tagger_1_0",
		"objectType": "case", "objectId": caseID})).WantError(t, 404, "NotFoundError")
	for _, p := range []string{"/api/status", "/api/v0/status", "/api/v1/status", "/metrics"} {
		keep(tm.anon().Call(t, http.MethodGet, p, nil)).Want(t, 200)
	}

	// A forced 500 is logged with its cause: the cause must not carry secrets either.
	casesColl, err := store.Collection(context.Background(), tm.db, "cases")
	if err != nil {
		t.Fatal(err)
	}
	if err := casesColl.Insert(context.Background(), map[string]any{"_id": "~999", "organisation": "soc", "title": 42,
		"number": "x"}); err != nil {
		t.Fatal(err)
	}
	keep(tm.analyst.Call(t, http.MethodGet, "/api/case/~999", nil))

	secrets := map[string]string{"server key": serverKey, "URL password": urlSecret, "password 1": password1,
		"password 2": password2, "zip password": zipPassword, "admin password": adminPassword}
	for i, k := range keys {
		secrets["key "+string(rune('a'+i))] = k
	}
	time.Sleep(200 * time.Millisecond) // let the tracker and the connector log what they would
	logText := logs.String()
	if !strings.Contains(logText, "analysis server call failed") || !strings.Contains(logText, "/api/user/current") {
		t.Fatalf("the logs were not captured:\n%s", logText)
	}
	db := databaseText(t, tm.env)
	for name, secret := range secrets {
		if strings.Contains(logText, secret) {
			t.Errorf("the logs hold the %s", name)
		}
		for coll, text := range db {
			if strings.Contains(text, secret) {
				t.Errorf("collection %s holds the %s in clear", coll, name)
			}
		}
		for _, r := range answers {
			if strings.Contains(string(r.Body), secret) {
				t.Errorf("%s %s: the answer holds the %s: %s", r.Method, r.Path, name, r.Body)
			}
			for h, vs := range r.Header {
				for _, v := range vs {
					if strings.Contains(v, secret) && !(h == "Set-Cookie") {
						t.Errorf("%s %s: header %s holds the %s", r.Method, r.Path, h, name)
					}
				}
			}
		}
	}
}
