package kubernetes

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/jobdir"
)

var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
var labelValueRE = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)

func TestJobName(t *testing.T) {
	long := strings.Repeat("AbCdEfGh", 12)
	cases := []struct {
		kind    analysis.Kind
		id      string
		attempt int
		want    string // "" = only check the form
	}{
		{analysis.KindAnalyzer, "abc123", 1, "an-abc123-1"},
		{analysis.KindResponder, "abc123", 2, "re-abc123-2"},
		{analysis.KindAnalyzer, "AbC123", 1, ""},
		{analysis.KindAnalyzer, "abc_123", 1, ""},
		{analysis.KindAnalyzer, long, 3, ""},
		{analysis.KindAnalyzer, "___", 1, ""},
		{analysis.KindAnalyzer, strings.Repeat("a", 70), 1000, ""},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got := JobName(c.kind, c.id, c.attempt)
		if c.want != "" && got != c.want {
			t.Errorf("JobName(%q, %d) = %q, want %q", c.id, c.attempt, got, c.want)
		}
		if len(got) > 63 || !dnsLabelRE.MatchString(got) {
			t.Errorf("JobName(%q, %d) = %q: not a DNS label of at most 63 characters", c.id, c.attempt, got)
		}
		if got != JobName(c.kind, c.id, c.attempt) {
			t.Errorf("JobName(%q) is not deterministic", c.id)
		}
		if prev, ok := seen[got]; ok {
			t.Errorf("%q and %q share the name %q", prev, c.id, got)
		}
		seen[got] = c.id
	}
	// Ids that differ only by case or by dropped characters stay distinct.
	if JobName(analysis.KindAnalyzer, "abc", 1) == JobName(analysis.KindAnalyzer, "ABC", 1) ||
		JobName(analysis.KindAnalyzer, "a_b", 1) == JobName(analysis.KindAnalyzer, "ab", 1) ||
		JobName(analysis.KindAnalyzer, long+"x", 1) == JobName(analysis.KindAnalyzer, long+"y", 1) {
		t.Error("distinct ids share a name")
	}
}

func TestLabelValue(t *testing.T) {
	for _, s := range []string{"AVx_1", "Acme Corp", "_x_", strings.Repeat("z", 80), "é", "", "a.b-c_d"} {
		v := LabelValue(s)
		if len(v) > 63 || !labelValueRE.MatchString(v) {
			t.Errorf("LabelValue(%q) = %q: not a label value", s, v)
		}
	}
	if LabelValue("AVx_1") != "AVx_1" || LabelValue("a b") == LabelValue("a_b") {
		t.Error("valid values must stay, changed ones must stay distinct")
	}
}

func TestSettingsProfiles(t *testing.T) {
	r := &Runner{opts: Options{
		Settings: Settings{Namespace: "jobs", Limits: map[string]string{"memory": "1Gi"}, NodeSelector: map[string]string{"pool": "a"}},
		Profiles: []Profile{
			{Definitions: []string{"File_Info_*"}, Settings: Settings{RuntimeClass: "gvisor", Limits: map[string]string{"memory": "4Gi"}}},
			{Organizations: []string{"Acme"}, Settings: Settings{Namespace: "acme-jobs"}},
		},
	}}
	s := r.settings("File_Info_8_0", "Acme")
	if s.RuntimeClass != "gvisor" || s.Limits["memory"] != "4Gi" || s.Namespace != "jobs" || s.NodeSelector["pool"] != "a" {
		t.Errorf("first matching profile: %+v", s)
	}
	if s := r.settings("Abuse_Finder_3_0", "Acme"); s.Namespace != "acme-jobs" || s.RuntimeClass != "" || s.Limits["memory"] != "1Gi" {
		t.Errorf("organization profile: %+v", s)
	}
	if s := r.settings("Abuse_Finder_3_0", "Other"); s.Namespace != "jobs" {
		t.Errorf("no profile: %+v", s)
	}
	if r.opts.Settings.Limits["memory"] != "1Gi" {
		t.Error("a profile changed the global settings")
	}
}

func TestLoadKubeconfig(t *testing.T) {
	dir := t.TempDir()
	ca := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte(ca), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tok"), []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := `apiVersion: v1
kind: Config
current-context: b
clusters:
- name: one
  cluster: {server: "https://one:6443", certificate-authority: ca.crt}
- name: two
  cluster: {server: "https://two:6443", certificate-authority-data: ` + base64.StdEncoding.EncodeToString([]byte(ca)) + `}
users:
- name: u1
  user: {token: abc}
- name: u2
  user: {tokenFile: tok}
- name: u3
  user: {exec: {command: aws}}
contexts:
- name: a
  context: {cluster: one, user: u1, namespace: ns-a}
- name: b
  context: {cluster: two, user: u2}
- name: c
  context: {cluster: one, user: u3}
`
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := LoadKubeconfig(path, "a")
	if err != nil || a.Server != "https://one:6443" || a.Token != "abc" || a.Namespace != "ns-a" || string(a.CAData) != ca {
		t.Fatalf("context a: %+v, %v", a, err)
	}
	b, err := LoadKubeconfig(path, "")
	if err != nil || b.Server != "https://two:6443" || b.TokenFile != filepath.Join(dir, "tok") || string(b.CAData) != ca {
		t.Fatalf("current context: %+v, %v", b, err)
	}
	if _, err := LoadKubeconfig(path, "c"); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("exec plugin: %v", err)
	}
	if _, err := LoadKubeconfig(path, "nope"); err == nil {
		t.Fatal("unknown context accepted")
	}
}

// The client re-reads a token file (bound service-account tokens rotate) and decodes Status refusals.
func TestClientTokenFileAndStatus(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"kind":"Status","status":"Failure","reason":"AlreadyExists","message":"jobs.batch \"an-x-1\" already exists","code":409}`)
	}))
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("one\n"), 0o600)
	c, err := NewClient(ClientConfig{Server: srv.URL, TokenFile: tok})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateJob(t.Context(), "ns", &Job{}, false)
	if !IsAlreadyExists(err) || IsNotFound(err) || IsQuotaExceeded(err) {
		t.Fatalf("want AlreadyExists, got %v", err)
	}
	os.WriteFile(tok, []byte("two\n"), 0o600)
	c.tokenRead = c.tokenRead.Add(-2 * tokenPeriod) // a minute later
	c.CreateJob(t.Context(), "ns", &Job{}, false)
	if len(got) != 2 || got[0] != "Bearer one" || got[1] != "Bearer two" {
		t.Fatalf("tokens sent: %q", got)
	}
}

func tarOf(t *testing.T, files map[string]string) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data))
	}
	tw.Close()
	return &b
}

// The callback routes: each token works once, only for its route and run, and not after the run ended; an
// upload lands in the job folder's output/ with jobdir's checks.
func TestCallbacks(t *testing.T) {
	dir := t.TempDir()
	job, err := jobdir.Prepare(dir, analysis.KindAnalyzer, analysis.RunInput{Data: "x", DataType: "ip"}, jobdir.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics()
	cb := newCallbacks(jobdir.OutputLimits{MaxOutput: 1000, MaxFile: 1000, MaxTotal: 2000}, jobdir.FolderAccess{}, slog.New(slog.DiscardHandler), m)
	srv := httptest.NewServer(cb)
	defer srv.Close()
	run, inTok, outTok := cb.register("an-x-1", job.Dir)
	do := func(method, path, token string, body io.Reader) int {
		req, _ := http.NewRequest(method, srv.URL+path, body)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	base := CallbackPath + "an-x-1"
	if code := do("GET", base+"/input", outTok, nil); code != 401 {
		t.Errorf("the output token fetched the input: %d", code)
	}
	if code := do("GET", CallbackPath+"an-y-1/input", inTok, nil); code != 401 {
		t.Errorf("another run's name: %d", code)
	}
	if code := do("GET", base+"/input", "", nil); code != 401 {
		t.Errorf("no token: %d", code)
	}
	if code := do("GET", "/other", inTok, nil); code != 404 {
		t.Errorf("another path: %d", code)
	}
	if code := do("GET", base+"/input", inTok, nil); code != 200 {
		t.Errorf("fetch: %d", code)
	}
	if code := do("GET", base+"/input", inTok, nil); code != 401 {
		t.Errorf("the input token worked twice: %d", code)
	}
	if got, _ := run.uploaded(); got {
		t.Fatal("uploaded before any upload")
	}
	if code := do("POST", base+"/output", outTok, tarOf(t, map[string]string{"output.json": `{"success":true,"full":{}}`, "a.bin": "A"})); code != 204 {
		t.Errorf("upload: %d", code)
	}
	if got, err := run.uploaded(); !got || err != nil {
		t.Errorf("uploaded: %v %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(job.Dir, "output", "a.bin")); err != nil || string(b) != "A" {
		t.Errorf("uploaded file: %q %v", b, err)
	}
	if code := do("POST", base+"/output", outTok, tarOf(t, map[string]string{"b.bin": "B"})); code != 401 {
		t.Errorf("the output token worked twice: %d", code)
	}

	// A refused upload leaves output/ empty; tokens die with the run.
	dir2 := t.TempDir()
	job2, _ := jobdir.Prepare(dir2, analysis.KindAnalyzer, analysis.RunInput{Data: "x", DataType: "ip"}, jobdir.Options{})
	run2, in2, out2 := cb.register("an-x-2", job2.Dir)
	if code := do("POST", CallbackPath+"an-x-2/output", out2, tarOf(t, map[string]string{"ok.bin": "1", "../escape": "2"})); code != 422 {
		t.Errorf("path trick: %d", code)
	}
	if got, err := run2.uploaded(); !got || err == nil {
		t.Errorf("refusal not recorded: %v %v", got, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(job2.Dir, "output")); len(entries) != 0 {
		t.Errorf("a refused upload left %d files", len(entries))
	}
	run2.close()
	if code := do("GET", CallbackPath+"an-x-2/input", in2, nil); code != 401 {
		t.Errorf("a token of an ended run worked: %d", code)
	}
	// The metrics count each call by route and result (the unknown path is not a route).
	for _, c := range []struct {
		route, result string
		want          float64
	}{{"input", "ok", 1}, {"input", "unauthorized", 5}, {"output", "ok", 1}, {"output", "unauthorized", 1},
		{"output", "refused", 1}, {"input", "refused", 0}, {"output", "error", 0}} {
		if got := testutil.ToFloat64(m.Callbacks(c.route, c.result)); got != c.want {
			t.Errorf("callbacks_total{route=%s,result=%s} = %v, want %v", c.route, c.result, got, c.want)
		}
	}
}

// The reasons a pod cannot start, as the kubelet and the scheduler report them (the fakelet only reports
// image errors: the others are read from the pod status here).
func TestStartProblem(t *testing.T) {
	r := &Runner{opts: Options{Log: slog.New(slog.DiscardHandler)}}
	spec := PodSpec{InitContainers: []Container{{Name: FetchContainer, Image: "jobio:1"}}, Containers: []Container{{Name: WorkerContainer, Image: "img:1"}}}
	waiting := func(name, reason string) Pod {
		st := ContainerStatus{Name: name, State: ContainerState{Waiting: &ContainerStateWaiting{Reason: reason, Message: "details"}}}
		p := Pod{Spec: spec, Status: PodStatus{Phase: "Pending"}}
		if name == WorkerContainer {
			p.Status.ContainerStatuses = []ContainerStatus{st}
		} else {
			p.Status.InitContainerStatuses = []ContainerStatus{st}
		}
		return p
	}
	unschedulable := Pod{Spec: spec, Status: PodStatus{Phase: "Pending", Conditions: []Condition{{Type: "PodScheduled", Status: "False",
		Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient memory."}}}}
	const early, late, limit = time.Second, 10 * time.Minute, 5 * time.Minute
	for _, c := range []struct {
		pods    []Pod
		pending time.Duration
		want    string
	}{
		{[]Pod{waiting(WorkerContainer, "ImagePullBackOff")}, early, "The worker's image img:1 could not be pulled (ImagePullBackOff)."},
		{[]Pod{waiting(WorkerContainer, "InvalidImageName")}, early, "The worker's image img:1 could not be pulled (InvalidImageName)."},
		{[]Pod{waiting(FetchContainer, "ImagePullBackOff")}, early, "The jobio image (job.kubernetes.jobio_image) jobio:1 could not be pulled (ImagePullBackOff)."},
		{[]Pod{waiting(WorkerContainer, "ErrImagePull")}, early, ""},
		{[]Pod{waiting(WorkerContainer, "ErrImagePull")}, late, "The worker's image img:1 could not be pulled (ErrImagePull)."},
		{[]Pod{waiting(WorkerContainer, "CreateContainerConfigError")}, early, "The container worker of the worker's pod could not be created (CreateContainerConfigError)."},
		{[]Pod{waiting(WorkerContainer, "ContainerCreating")}, early, ""},
		{[]Pod{unschedulable}, early, ""},
		{[]Pod{unschedulable}, late, "The worker's pod could not be scheduled within 5m0s: 0/3 nodes are available: 3 Insufficient memory."},
		{[]Pod{{Spec: spec, Status: PodStatus{Phase: "Pending"}}}, late, "The worker's pod did not start within 5m0s."},
		{[]Pod{{Spec: spec, Status: PodStatus{Phase: "Running"}}}, late, ""},
		{nil, early, ""},
		{nil, late, "The Kubernetes Job made no pod within 5m0s."},
	} {
		got, outcome := r.startProblem(c.pods, c.pending, limit)
		if got != c.want {
			t.Errorf("%+v after %s: got %q, want %q", c.pods, c.pending, got, c.want)
		}
		want := OutcomeNotStarted
		switch {
		case c.want == "":
			want = ""
		case strings.Contains(c.want, "could not be pulled"):
			want = OutcomeImagePull
		case strings.Contains(c.want, "could not be created"):
			want = OutcomeCreateError
		}
		if outcome != want {
			t.Errorf("%q: outcome %q, want %q", c.want, outcome, want)
		}
	}
}

// A ResourceQuota refusal (a stand-in API server's answer; TestCluster_QuotaRefusalDefers has the real one)
// defers the job: one create, an analysis.DeferError saying why, no failure. The start-up dry run passes.
func TestQuotaRefusalDefers(t *testing.T) {
	var creates int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			creates++
		}
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"kind":"Status","status":"Failure","reason":"Forbidden","code":403,`+
			`"message":"jobs.batch \"an-j-1\" is forbidden: exceeded quota: analysis-jobs, requested: count/jobs.batch=1, used: count/jobs.batch=50, limited: count/jobs.batch=50"}`)
	}))
	defer srv.Close()
	c, _ := NewClient(ClientConfig{Server: srv.URL, Namespace: "jobs"})
	r, err := New(Options{Client: c, JobioImage: "jobio:1", CallbackURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(t.Context()); err != nil {
		t.Fatalf("check with the quota used up: %v", err)
	}
	creates = 0
	ctx, cancel := context.WithTimeout(runner.WithJob(t.Context(), runner.Job{ID: "j", Attempt: 1}), time.Minute)
	defer cancel()
	out, err := r.Run(ctx, analysis.Definition{ID: "D_1", Kind: analysis.KindAnalyzer, DockerImage: "img"},
		analysis.RunInput{Data: "x", DataType: "ip"}, filepath.Join(t.TempDir(), "run"))
	var d *analysis.DeferError
	if !errors.As(err, &d) || d.Reason != QuotaReason || out.Success || out.ErrorMessage != "" {
		t.Fatalf("got %+v, %v; want a DeferError", out, err)
	}
	if creates != 1 {
		t.Fatalf("the create was tried %d times, want 1", creates)
	}
	if n := testutil.ToFloat64(r.opts.Metrics.Runs(OutcomeQuota)); n != 1 {
		t.Fatalf("runs_total{outcome=quota} = %v, want 1", n)
	}
}
