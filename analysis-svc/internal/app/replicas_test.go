package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// Issue 26: two replicas of analysis-svc on one database, each with its own kubernetes runner (its own owner,
// callback listener and job folder), race for the same jobs. Every job is run by exactly one Kubernetes Job
// (one Job object, by UID, for each job), only attempt 1 is ever made, no two pods of a job are live at once,
// and every job ends with its worker's report.
func TestKubernetesTwoReplicasOneDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	c := sharedCluster(t)
	worker, jobio := sharedImages(t)
	kc, err := c.Kubeconfig("svc-replicas", c.RunnerToken, c.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var released sync.Once
	hold := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer hold.Close()
	defer released.Do(func() { close(release) })

	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "Holder"), 0o755); err != nil {
		t.Fatal(err)
	}
	def := fmt.Sprintf(`{"name":"Holder","version":"1.0","author":"t","url":"u","license":"AGPL-V3","description":"holds",
  "dataTypeList":["ip"],"dockerImage":%q,
  "configurationItems":[{"name":"release_url","description":"u","type":"string","multi":false,"required":true}]}`, worker)
	if err := os.WriteFile(filepath.Join(root, "Holder", "Holder.json"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}

	const key = "bootstrap-key-0123456789abcdefghijkl"
	db := docstoretest.New(t)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	replica := func(pod string) *httptest.Server {
		cfg, err := Default()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Auth.Secret = "replicas-test-secret-0123456789abcdef"
		cfg.HTTP.AllowInsecureCredentials = true
		cfg.Bootstrap.Login, cfg.Bootstrap.Key = "root", key
		cfg.Analyzer.Paths = []string{root}
		cfg.Job.Runner, cfg.Job.Directory, cfg.Job.Cache, cfg.Job.Workers = []string{"kubernetes"}, t.TempDir(), 0, 5
		k := &cfg.Job.Kubernetes
		k.Kubeconfig, k.JobioImage, k.CallbackListen, k.PodIP = kc, jobio, "127.0.0.1:0", "127.0.0.1"
		k.ServiceAccount, k.PodName = "analysis-job", pod
		a, err := New(ctx, cfg, slog.New(slog.NewTextHandler(testLog{t, pod}, nil)), Options{DB: db})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close(context.Background()) })
		if a.kubernetes == nil {
			t.Fatalf("%s: the kubernetes runner did not start", pod)
		}
		stopJobs := a.StartJobs(ctx)
		t.Cleanup(stopJobs)
		srv := httptest.NewServer(a.Handler)
		t.Cleanup(srv.Close)
		return srv
	}
	a, b := replica("replica-a"), replica("replica-b")

	call := func(base, method, path, key, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		m := map[string]any{}
		if json.Unmarshal(raw, &m) != nil {
			m["_raw"] = string(bytes.TrimSpace(raw))
		}
		return resp.StatusCode, m
	}
	if code, m := call(a.URL, "POST", "/api/organization", key, `{"name":"soc"}`); code != 201 {
		t.Fatalf("create org: %d %v", code, m)
	}
	if code, m := call(a.URL, "POST", "/api/user", key, `{"login":"adm","organization":"soc","roles":["read","analyze","orgadmin"]}`); code != 201 {
		t.Fatalf("create user: %d %v", code, m)
	}
	_, raw := call(a.URL, "POST", "/api/user/adm/key/renew", key, "")
	adm := raw["_raw"].(string)
	code, m := call(a.URL, "POST", "/api/organization/analyzer/Holder_1_0", adm, fmt.Sprintf(`{"configuration":{"release_url":%q}}`, hold.URL))
	if code != 201 {
		t.Fatalf("enable: %d %v", code, m)
	}
	analyzer := m["id"].(string)

	// Jobs submitted to both replicas; both replicas' workers race for each.
	var jobs []string
	for i := range 6 {
		base := a.URL
		if i%2 == 1 {
			base = b.URL
		}
		code, j := call(base, "POST", "/api/analyzer/"+analyzer+"/run", adm, fmt.Sprintf(`{"dataType":"ip","data":"hold","message":"%d"}`, i))
		if code != 200 {
			t.Fatalf("run %d: %d %v", i, code, j)
		}
		jobs = append(jobs, j["id"].(string))
	}

	type seen struct {
		uids     map[string]bool
		attempts map[string]bool
		owners   map[string]bool
	}
	watch := map[string]*seen{}
	for _, id := range jobs {
		watch[kubernetes.LabelValue(id)] = &seen{map[string]bool{}, map[string]bool{}, map[string]bool{}}
	}
	overlap := ""
	look := func() int {
		var list struct{ Items []kubernetes.Job }
		if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/apis/batch/v1/namespaces/"+c.Namespace+"/jobs?labelSelector="+
			kubernetes.LabelManagedBy+"%3D"+kubernetes.ManagedBy, nil, &list); err != nil {
			t.Fatal(err)
		}
		for _, j := range list.Items {
			if s := watch[j.Metadata.Labels[kubernetes.LabelJob]]; s != nil {
				s.uids[j.Metadata.UID] = true
				s.attempts[j.Metadata.Labels[kubernetes.LabelAttempt]] = true
				s.owners[j.Metadata.Labels[kubernetes.LabelOwner]] = true
			}
		}
		var pods struct{ Items []kubernetes.Pod }
		if err := c.Do(t.Context(), c.AdminToken, http.MethodGet, "/api/v1/namespaces/"+c.Namespace+"/pods?labelSelector="+
			kubernetes.LabelManagedBy+"%3D"+kubernetes.ManagedBy, nil, &pods); err != nil {
			t.Fatal(err)
		}
		live, running := map[string]int{}, 0
		for _, p := range pods.Items {
			id := p.Metadata.Labels[kubernetes.LabelJob]
			if watch[id] == nil || p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed" {
				continue
			}
			live[id]++
			if live[id] > 1 && overlap == "" {
				overlap = "two live pods of the job " + id
			}
			for _, st := range p.Status.ContainerStatuses {
				if st.Name == kubernetes.WorkerContainer && st.State.Running != nil {
					running++
				}
			}
		}
		return running
	}
	// All six workers hold at once (5 workers a replica, one of them kept for another organization: job.reserve): both replicas took some.
	deadline := time.Now().Add(3 * time.Minute)
	for look() < len(jobs) {
		if time.Now().After(deadline) {
			t.Fatalf("the six workers were not running within 3 minutes\n%s", c.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	released.Do(func() { close(release) })
	done := map[string]bool{}
	deadline = time.Now().Add(3 * time.Minute)
	for len(done) < len(jobs) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs ended within 3 minutes", len(done), len(jobs))
		}
		look()
		for _, id := range jobs {
			if done[id] {
				continue
			}
			code, j := call(a.URL, "GET", "/api/job/"+id, adm, "")
			if code != 200 {
				t.Fatalf("job %s: %d %v", id, code, j)
			}
			switch j["status"] {
			case "Success":
				done[id] = true
			case "Failure":
				t.Fatalf("job %s failed: %v", id, j)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	owners := map[string]bool{}
	for id, s := range watch {
		if len(s.uids) != 1 || fmt.Sprint(s.attempts) != "map[1:true]" || len(s.owners) != 1 {
			t.Errorf("job %s: Jobs %v, attempts %v, owners %v", id, s.uids, s.attempts, s.owners)
		}
		for o := range s.owners {
			owners[strings.SplitN(o, ".", 2)[0]] = true
		}
	}
	if overlap != "" {
		t.Error(overlap)
	}
	if !owners["replica-a"] || !owners["replica-b"] {
		t.Errorf("one replica ran every job (no race): %v", owners)
	}
}

type testLog struct {
	t    *testing.T
	name string
}

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(l.name + ": " + strings.TrimSpace(string(p)))
	return len(p), nil
}
