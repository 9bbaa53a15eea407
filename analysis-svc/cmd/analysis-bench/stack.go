package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/openir/platform/analysis-svc/internal/analysis"
	"github.com/openir/platform/analysis-svc/internal/app"
	"github.com/openir/platform/analysis-svc/internal/store"
	"github.com/openir/platform/pkg/benchkit"
	"github.com/openir/platform/pkg/conf"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/web"
)

const (
	benchSecret = "analysis-bench-secret-0123456789abcdef"
	superLogin  = "bench-root"
	superKey    = "bench-root-key-0123456789-abcdefghijkl" // bootstrap keys need 32+ characters
	benchOrg    = "bench"
	adminLogin  = "bench-admin"
	echoDefID   = "Echo_1_0"     // the built-in fast analyzer
	shDefID     = "Bench_Sh_1_0" // the external analyzer the bench writes (Bench_Sh, 1.0)
	reportDefID = "Bench_Report_1_0"
)

// The external analyzer of section 4, in the public format: `<command> <job folder>`, reading
// input/input.json and writing output/output.json (its input comes back in `full`).
const (
	shScript = `#!/bin/sh
# analysis-bench: a trivial external analyzer in the public format.
in=$(cat "$1/input/input.json")
printf '{"success":true,"summary":{"taxonomies":[{"level":"info","namespace":"Bench","predicate":"Run","value":"ok"}]},"full":{"input":%s},"artifacts":[],"operations":[]}' "$in" > "$1/output/output.json"
`
	shDefinition = `{
  "name": "Bench_Sh", "version": "1.0", "author": "analysis-bench", "url": "https://example.invalid/bench",
  "license": "AGPL-V3", "description": "Trivial sh analyzer of the benchmark: returns its input",
  "dataTypeList": ["ip", "domain", "hash", "url", "other"], "command": "Bench/bench.sh", "baseConfig": "Bench",
  "config": {}, "configurationItems": []
}
`
	// Bench_Report answers the output the bench wrote in Bench/report.json (the web interface rows' large
	// report), whatever its input.
	reportScript = `#!/bin/sh
# analysis-bench: an external analyzer whose output is Bench/report.json.
cat Bench/report.json > "$1/output/output.json"
`
	reportDefinition = `{
  "name": "Bench_Report", "version": "1.0", "author": "analysis-bench", "url": "https://example.invalid/bench",
  "license": "AGPL-V3", "description": "Sh analyzer of the benchmark: answers the report the bench wrote",
  "dataTypeList": ["domain"], "command": "Bench/report.sh", "baseConfig": "Bench",
  "config": {}, "configurationItems": []
}
`
)

// stack is analysis-svc running in this process, built by internal/app as cmd/analysis-svc builds it, with
// the defaults of the configuration, on an embedded database of its own, served over HTTP on 127.0.0.1.
type stack struct {
	app           *app.App
	db            *docstore.DB
	url           string
	analyzersRoot string
	jobDir        string
	server        *benchkit.Server
	super         *benchkit.Client
	admin         *benchkit.Client // orgadmin of benchOrg (roles read, analyze, orgadmin)
	echoID        string           // the enabled Echo analyzer
	shID          string           // the enabled Bench_Sh analyzer
	logs          *benchkit.LogSink
}

// openDB opens the database db (benchkit.Run.DB: the embedded SQLite file, or a fresh database on the
// MongoDB pass) as internal/app does.
func openDB(ctx context.Context, db docstore.Config, logs *benchkit.LogSink) (*docstore.DB, error) {
	return docstore.Open(ctx, db, conf.Logger(logs, "info", "analysis-svc"))
}

// startStack builds and starts the service on the fresh database db (benchkit.Run.DB), with its files under
// dir: analyzer.paths holds the Bench_Sh and Bench_Report analyzers, job.directory the job folders. Webhooks
// may go to the bench's receiver on 127.0.0.1 (webhook.allow_private). close closes the database too.
func startStack(ctx context.Context, db docstore.Config, logs *benchkit.LogSink, dir string) (*stack, error) {
	s := &stack{analyzersRoot: filepath.Join(dir, "analyzers"), jobDir: filepath.Join(dir, "jobs"), logs: logs}
	if err := os.MkdirAll(filepath.Join(s.analyzersRoot, "Bench"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.jobDir, 0o700); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name, text string
		mode       os.FileMode
	}{{"bench.sh", shScript, 0o755}, {"Bench_Sh.json", shDefinition, 0o644}, {"report.sh", reportScript, 0o755},
		{"Bench_Report.json", reportDefinition, 0o644}} {
		if err := os.WriteFile(filepath.Join(s.analyzersRoot, "Bench", f.name), []byte(f.text), f.mode); err != nil {
			return nil, err
		}
	}
	cfg, err := app.Default()
	if err != nil {
		return nil, err
	}
	cfg.Database.URI, cfg.Database.Path, cfg.Database.Name = db.URI, db.Path, db.Name
	cfg.Auth.Secret = benchSecret
	cfg.Bootstrap.Login, cfg.Bootstrap.Key = superLogin, superKey
	cfg.HTTP.AllowInsecureCredentials = true // plain HTTP on 127.0.0.1: the key renewal of the setup
	cfg.Analyzer.Paths, cfg.Job.Directory = []string{s.analyzersRoot}, s.jobDir
	cfg.Webhook.AllowPrivate = true
	a, err := app.New(ctx, cfg, conf.Logger(s.logs, "info", "analysis-svc"), app.Options{})
	if err != nil {
		return nil, err
	}
	s.app, s.db = a, a.DB
	for _, def := range []string{shDefID, reportDefID} {
		if _, ok := a.Catalog.Definition(analysis.KindAnalyzer, def); !ok || !a.Bootstrapped {
			s.close()
			return nil, fmt.Errorf("analyzer.paths did not give %s (or the database had its superadmin)", def)
		}
	}
	a.Start(context.WithoutCancel(ctx))
	if s.server, err = benchkit.Serve(web.NewServer(a.Log, a.Handler, a.ServeConfig())); err != nil {
		s.close()
		return nil, err
	}
	s.url = s.server.URL

	if err := s.setup(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// setup makes, over the API, the organization, its orgadmin with a key, and enables Echo and Bench_Sh.
func (s *stack) setup(ctx context.Context) error {
	s.super = benchkit.NewClient(s.url, superKey)
	if _, err := s.super.Call(ctx, http.MethodPost, "/api/organization",
		map[string]any{"name": benchOrg, "description": "benchmark"}, http.StatusCreated, nil); err != nil {
		return err
	}
	if _, err := s.super.Call(ctx, http.MethodPost, "/api/user", map[string]any{"login": adminLogin, "name": "Bench admin",
		"organization": benchOrg, "roles": []string{"read", "analyze", "orgadmin"}}, http.StatusCreated, nil); err != nil {
		return err
	}
	r, err := s.super.Call(ctx, http.MethodPost, "/api/user/"+adminLogin+"/key/renew", nil, http.StatusOK, nil)
	if err != nil {
		return err
	}
	s.admin = benchkit.NewClient(s.url, string(r.Body))
	for _, w := range []struct {
		def string
		id  *string
	}{{echoDefID, &s.echoID}, {shDefID, &s.shID}} {
		var out struct {
			ID string `json:"id"`
		}
		if _, err := s.admin.Call(ctx, http.MethodPost, "/api/organization/analyzer/"+w.def, map[string]any{},
			http.StatusCreated, &out); err != nil {
			return err
		}
		*w.id = out.ID
	}
	return nil
}

// close stops the HTTP server, then the job workers and the events, and closes the database.
func (s *stack) close() {
	if s.server != nil {
		s.server.Close()
	}
	s.app.Close(context.Background())
}

// collection opens a collection of the stack's database as the stores declare it (their indexes included).
func (s *stack) collection(ctx context.Context, name string) (*docstore.Collection, error) {
	return store.Collection(ctx, s.db, name)
}
