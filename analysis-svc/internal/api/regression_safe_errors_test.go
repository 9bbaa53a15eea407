package api_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/runner"
)

// A server fault while running a job (here its folder, where the observable's file goes, cannot be made)
// fails the job with a message safe for its readers, without the path or the system's text; the cause is
// logged once with the job id.
func TestRegressionJobErrorMessageIsSafe(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "absent-job-directory")
	f := newJobFixture(t, withRunners(runner.Options{Dir: absent}))
	id := multipartRun(t, f.analyst, "/api/analyzer/"+f.analyzer+"/run", "attachment", "sample.bin", []byte("10.9.0.1"),
		`{"dataType":"file"}`).Want(t, http.StatusOK).Object(t)["id"].(string)
	j := f.wait(t, f.analyst, id)
	msg, _ := j["report"].(map[string]any)["errorMessage"].(string)
	if j["status"] != "Failure" || msg != "cannot create the job folder" {
		t.Fatalf("job %v", j)
	}
	got := f.analyst.Call(t, http.MethodGet, "/api/job/"+id, nil).Want(t, http.StatusOK).Object(t)
	if em, _ := got["errorMessage"].(string); em != "cannot create the job folder" {
		t.Errorf("job errorMessage %q", em)
	}
	var logged int
	for _, line := range strings.Split(f.e.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"job failed"`) && strings.Contains(line, id) {
			logged++
			if !strings.Contains(line, "absent-job-directory") {
				t.Errorf("the cause is not logged: %s", line)
			}
		}
	}
	if logged != 1 {
		t.Errorf("the failure is logged %d times, want once", logged)
	}
}
