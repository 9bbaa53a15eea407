package app

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes"
)

// job.runner kubernetes against a real API server (k8stest), as the analysis-svc service account that
// deploy/k8s/kubernetes-runner binds: the start-up dry run passes, image definitions resolve to the runner and
// the callback listener answers (only its routes, only with a token); with credentials the API server
// refuses, the runner is disabled with the reason and image definitions are refused.
func TestKubernetesRunnerFromConfig(t *testing.T) {
	c := sharedCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	build := func(token string) (*App, *bytes.Buffer, *runner.Executors) {
		kc, err := c.Kubeconfig("svc-"+token[:4], token, c.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := Default()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Job.Runner = []string{"kubernetes"}
		k := &cfg.Job.Kubernetes
		k.Kubeconfig, k.JobioImage, k.CallbackListen, k.PodIP = kc, "openir/analysis-svc:test", "127.0.0.1:0", "127.0.0.1"
		k.ServiceAccount = "analysis-job"
		k.Limits = map[string]string{"memory": "512Mi"}
		logs := &bytes.Buffer{}
		a := &App{Config: cfg}
		a.Log = slog.New(slog.NewTextHandler(logs, nil))
		o, err := a.runnerOptions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return a, logs, runner.New(o)
	}
	def := analysis.Definition{ID: "Img_1_0", Kind: analysis.KindAnalyzer, DockerImage: "img:1"}

	a, logs, ex := build(c.RunnerToken)
	defer a.Close(context.Background())
	if a.kubernetes == nil || ex.Executor(def) == nil {
		t.Fatalf("the runner did not start: %s", logs)
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	a.startKubernetes(sctx)
	url := "http://" + a.callbackListener.Addr().String()
	for path, want := range map[string]int{kubernetes.CallbackPath + "an-x-1/input": 401, "/api/status": 404} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}

	b, logs, ex := build("not-a-valid-token")
	defer b.Close(context.Background())
	if b.kubernetes != nil || ex.Executor(def) != nil || !strings.Contains(logs.String(), "kubernetes analyzers are disabled") ||
		!strings.Contains(logs.String(), "401") {
		t.Fatalf("a refused runner: %s", logs)
	}
}
