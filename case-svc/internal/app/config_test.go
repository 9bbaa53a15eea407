package app

import (
	"io"
	"testing"
	"time"
)

// CASE_ANALYSIS_SERVERS carries the connector's servers as JSON, as deployments set it from a secret.
func TestLoad_ServersFromEnv(t *testing.T) {
	t.Setenv("CASE_ANALYSIS_SERVERS", `[{"name":"a","url":"http://a:9001","key":"k","timeout":"30s","organisations":["x"]},{"name":"b","url":"http://b:9001","key":"k2"}]`)
	t.Setenv("CASE_HTTP_ADDR", "127.0.0.1:1234")
	c, err := Load(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Analysis.Servers) != 2 || c.Analysis.Servers[0].Timeout != 30*time.Second || c.Analysis.Servers[1].Name != "b" ||
		c.Analysis.Servers[0].Organisations[0] != "x" {
		t.Fatalf("servers = %+v", c.Analysis.Servers)
	}
	if c.HTTP.Addr != "127.0.0.1:1234" || c.Database.Name != "cases" {
		t.Fatalf("http.addr %q database.name %q", c.HTTP.Addr, c.Database.Name)
	}
	t.Setenv("CASE_ANALYSIS_SERVERS", `[{"name":"a","url":"http://a"},{"name":"a","url":"http://b"}]`)
	if _, err := Load(nil, io.Discard); err == nil {
		t.Fatal("duplicate server names accepted")
	}
}
