package webui

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/pkg/webui"
)

// BenchmarkJobHistory renders the job history of 50 jobs (the bench's page size) without the search, the
// part of GET /ui/jobs that the API request does not have.
func BenchmarkJobHistory(b *testing.B) {
	h, err := New(Services{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	jobs := make([]analysis.Job, 50)
	for i := range jobs {
		t := time.Date(2026, 11, 28, 12, i, 0, 0, time.UTC)
		jobs[i] = analysis.Job{ID: fmt.Sprintf("job%017d", i), Kind: analysis.KindAnalyzer, WorkerName: "Observable_Validator",
			DataType: "ip", Data: fmt.Sprintf("198.51.100.%d", i), TLP: 2, Status: analysis.JobSuccess, CreatedAt: t, CreatedBy: "analyst"}
	}
	v, _, err := webui.ParseList(url.Values{"size": {"50"}}, "-createdAt", jobSorts)
	if err != nil {
		b.Fatal(err)
	}
	v.SetTotal(1_000_000)
	p := jobListPage{Page: webui.Page{Service: Service, Title: "Jobs", User: "analyst", Org: "soc"}, List: v, Jobs: jobRows(jobs), Statuses: jobStatuses}
	e := echo.New()
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		c := e.NewContext(httptest.NewRequest(http.MethodGet, "/ui/jobs?size=50", nil), rec)
		if err := h.pages.Render(c, http.StatusOK, "jobs", "", p); err != nil {
			b.Fatal(err)
		}
	}
}
