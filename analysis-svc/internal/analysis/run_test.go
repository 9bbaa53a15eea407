package analysis_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/identity"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/docstore/docstoretest"
)

// executors resolves every definition but "None_1_0" to one executor and counts the resolutions.
type executors struct {
	mu       sync.Mutex
	resolved map[string]int // definition id → Executor calls
	x        *executor
}

func (e *executors) Executor(def analysis.Definition) analysis.Executor {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resolved[def.ID]++
	if def.ID == "None_1_0" {
		return nil
	}
	return e.x
}

// executor answers each job as its data says: "ok" succeeds, "folder" fails to make the job folder, and
// records the jobs it ran and the folders released.
type executor struct {
	mu       sync.Mutex
	ran      []string
	released []string
}

func (x *executor) Execute(_ context.Context, run analysis.Execution) (analysis.RunOutput, string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.ran = append(x.ran, run.JobID)
	if run.Input.Data == "folder" {
		return analysis.RunOutput{}, "", &analysis.ExecError{Message: "cannot create the job folder", Err: errors.New("mkdir /secret: denied")}
	}
	return analysis.RunOutput{Success: true, Full: map[string]any{"data": run.Input.Data}}, "folder-" + run.JobID, nil
}

func (x *executor) Release(folder string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.released = append(x.released, folder)
}

// TestJobs_RunExecutor: a definition is resolved to its executor once, when the catalog takes it in (not per
// job); its jobs run through that executor, which gets each job folder back once the report is made. A
// definition no runner can run fails its jobs, as does a failure of the executor, with its message.
func TestJobs_RunExecutor(t *testing.T) {
	ctx := t.Context()
	db := docstoretest.New(t)
	jstore, err := store.NewJobStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	wstore, err := store.NewWorkerStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	files, err := store.NewFileStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	run := func(context.Context, analysis.RunInput) (analysis.RunOutput, error) {
		t.Error("the domain ran a built-in itself")
		return analysis.RunOutput{}, nil
	}
	catalog := analysis.NewCatalog(analysis.Definition{ID: "Echo_1_0", Kind: analysis.KindAnalyzer, Builtin: run},
		analysis.Definition{ID: "None_1_0", Kind: analysis.KindAnalyzer, Command: "/none"})
	x := &executor{}
	e := &executors{resolved: map[string]int{}, x: x}
	catalog.SetExecutors(e)
	for _, def := range []string{"Echo_1_0", "None_1_0"} {
		if err := wstore.CreateWorker(ctx, analysis.Worker{ID: def, Kind: analysis.KindAnalyzer, Organization: "soc",
			Name: def, DefinitionID: def, DataTypeList: []string{"other"}}); err != nil {
			t.Fatal(err)
		}
	}
	jobs := analysis.NewJobs(jstore, wstore, catalog, files, analysis.JobsConfig{Workers: 2, Poll: 20 * time.Millisecond}, nil)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = jobs.Run(runCtx) }()
	defer func() { stop(); <-done }()

	caller := identity.Caller{Login: "ann", Org: "soc", Roles: []identity.Role{identity.RoleAnalyze}}
	for _, c := range []struct{ worker, data, status, message string }{
		{"Echo_1_0", "ok", analysis.JobSuccess, ""},
		{"Echo_1_0", "ok again", analysis.JobSuccess, ""},
		{"Echo_1_0", "folder", analysis.JobFailure, "cannot create the job folder"},
		{"None_1_0", "ok", analysis.JobFailure, "no enabled runner can run None_1_0 (job.runner)"},
	} {
		j, err := jobs.Submit(ctx, caller, analysis.KindAnalyzer, c.worker, analysis.Submission{DataType: "other", Data: c.data, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		j, r, err := jobs.WaitReport(ctx, caller, j.ID, 10*time.Second)
		if err != nil || j.Status != c.status || r == nil || r.ErrorMessage != c.message {
			t.Fatalf("%s %q: %+v, %+v, %v; want %s %q", c.worker, c.data, j, r, err, c.status, c.message)
		}
		if c.status == analysis.JobSuccess && r.Full["data"] != c.data {
			t.Errorf("%s %q: report %v", c.worker, c.data, r.Full)
		}
	}
	// A folder is released after the job's end is stored (executor.go), so after its report can be read:
	// the workers are stopped, and Run has returned, before the releases are counted.
	stop()
	<-done
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.ran) != 3 || len(x.released) != 2 || x.released[0] != "folder-"+x.ran[0] || x.released[1] != "folder-"+x.ran[1] {
		t.Errorf("executor ran %v, released %v; want the three Echo jobs, the two successful folders released", x.ran, x.released)
	}
	if e.resolved["Echo_1_0"] != 1 || e.resolved["None_1_0"] != 1 {
		t.Errorf("resolutions %v; want one per definition", e.resolved)
	}
}
