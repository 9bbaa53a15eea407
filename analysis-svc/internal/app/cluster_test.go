package app

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/runner/kubernetes/k8stest"
)

// The package's Kubernetes tests share one control plane and one pair of images, made on first use.
var shared struct {
	once          sync.Once
	cluster       *k8stest.Cluster
	dir           string
	worker, jobio string
	skip          string
	err           error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cluster != nil {
		shared.cluster.Stop()
		os.RemoveAll(shared.dir)
	}
	for _, img := range []string{shared.worker, shared.jobio} {
		if img != "" {
			exec.Command("docker", "rmi", "-f", img).Run()
		}
	}
	os.Exit(code)
}

// sharedCluster starts the control plane once, or skips the test when a tool is missing (in CI, where .ci/run
// installs them, it fails instead).
func sharedCluster(t *testing.T) *k8stest.Cluster {
	t.Helper()
	shared.once.Do(func() {
		if shared.skip = k8stest.Missing(); shared.skip != "" {
			return
		}
		bin, err := k8stest.Binaries(os.Stderr)
		if err != nil {
			shared.err = err
			return
		}
		if shared.dir, shared.err = os.MkdirTemp("", "k8stest-app-"); shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if shared.cluster, shared.err = k8stest.Start(ctx, bin, shared.dir, "analysis-jobs"); shared.err != nil {
			shared.cluster = nil
		}
	})
	if shared.skip != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("the kubernetes tests must run in CI: %s", shared.skip)
		}
		t.Skip("no Kubernetes test control plane: " + shared.skip)
	}
	if shared.err != nil {
		t.Fatalf("start the test control plane: %v", shared.err)
	}
	return shared.cluster
}

// sharedImages builds the test worker and the jobio image once.
var imagesOnce sync.Once
var imagesErr error

func sharedImages(t *testing.T) (worker, jobio string) {
	t.Helper()
	imagesOnce.Do(func() {
		if shared.worker, imagesErr = k8stest.BuildWorkerImage(); imagesErr != nil {
			return
		}
		shared.jobio, imagesErr = k8stest.BuildJobioImage()
	})
	if imagesErr != nil {
		t.Fatal(imagesErr)
	}
	return shared.worker, shared.jobio
}
