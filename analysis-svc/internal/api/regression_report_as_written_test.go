package api_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/runner"
	"github.com/openir/platform/analysis-svc/internal/runner/process"
)

// probeFlavor is a definition carrying public flavors' items whose default secrets are ordinary words
// (VMRay's archive_password "malware", Wazuh's wazuh_password "bar", Minemeld's "password", DNS-RPZ's
// tsig_keyval "updateme"), an item marked secret and an api_key.
func probeFlavor(name, command string) string {
	b, _ := json.Marshal(map[string]any{"name": name, "version": "1.0", "author": "test", "url": "https://example.org",
		"license": "AGPL-V3", "description": "probe", "dataTypeList": []string{"domain", "other"}, "command": command,
		"baseConfig": name, "configurationItems": []any{
			map[string]any{"name": "archive_password", "description": "VMRay", "type": "string", "multi": false, "required": false, "defaultValue": "malware"},
			map[string]any{"name": "wazuh_password", "description": "Wazuh", "type": "string", "multi": false, "required": false, "defaultValue": "bar"},
			map[string]any{"name": "minemeld_password", "description": "Minemeld", "type": "string", "multi": false, "required": false, "defaultValue": "password"},
			map[string]any{"name": "tsig_keyval", "description": "DNS-RPZ", "type": "string", "multi": false, "required": false, "defaultValue": "updateme"},
			map[string]any{"name": "token", "description": "API token", "type": "string", "multi": false, "required": false, "secret": true},
			map[string]any{"name": "api_key", "description": "API key", "type": "string", "multi": false, "required": false},
		}})
	return string(b)
}

// The worker's report, as its bytes: keys sorted and compact, as the service serves JSON.
const (
	probeSummary = `{"taxonomies":[{"level":"malicious","namespace":"Probe","predicate":"verdict","value":"malware"},{"level":"info","namespace":"bar","predicate":"password","value":"updateme"}]}`
	probeFull    = `{"malware_family":"Emotet","password":"bar","score":1.0,"updateme":{"malware":["password","bar"]},"vendor":"Barracuda bar","verdict":"malware"}`
)

// Issue 30: a report whose words equal the definition's default secrets comes back byte-equal to what the
// worker wrote: summary, full report (keys included), operations and artifacts.
func TestRegressionReportAsWritten(t *testing.T) {
	needPython(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "Probe", "probe.py"), `#!/usr/bin/env python3
import os, sys
job = sys.argv[1]
out = '{"success": true, "summary": `+probeSummary+`, "full": `+probeFull+`, "operations": [{"tag":"malware","type":"AddTagToArtifact"}], "artifacts": [{"dataType": "domain", "data": "malware.example.net", "message": "bar", "tags": ["password"]}]}'
open(os.path.join(job, "output", "output.json"), "w").write(out)
`, 0o755)
	writeFile(t, filepath.Join(root, "Probe", "Probe.json"), probeFlavor("Probe", "Probe/probe.py"), 0o644)
	x := newExternalEnv(t, []string{root}, nil, process.Options{}, runner.Options{})
	w := x.enable(t, "analyzer", "Probe_1_0", map[string]any{})
	id := x.runRaw(t, "analyzer", w, `{"dataType":"domain","data":"example.org"}`)
	x.waitRaw(t, id)

	var rep struct {
		Summary, Full, Operations json.RawMessage
	}
	var job struct {
		Status string
		Report json.RawMessage
	}
	x.analyst.Call(t, http.MethodGet, "/api/job/"+id+"/report", nil).Want(t, http.StatusOK).Decode(t, &job)
	if err := json.Unmarshal(job.Report, &rep); err != nil || job.Status != "Success" {
		t.Fatalf("report %s: %v", job.Report, err)
	}
	if string(rep.Summary) != probeSummary || string(rep.Full) != probeFull ||
		string(rep.Operations) != `[{"tag":"malware","type":"AddTagToArtifact"}]` {
		t.Errorf("the report differs from the worker's:\nsummary %s\nfull    %s\nops     %s", rep.Summary, rep.Full, rep.Operations)
	}
	arts := x.analyst.Call(t, http.MethodGet, "/api/job/"+id+"/artifacts", nil).Want(t, http.StatusOK).List(t)
	if len(arts) != 1 || arts[0]["data"] != "malware.example.net" || arts[0]["message"] != "bar" ||
		mustJSONText(t, arts[0]["tags"]) != `["password"]` {
		t.Errorf("artifacts %v", arts)
	}
}

func mustJSONText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// leakyWorker echoes its configuration in every way a worker does: cortexutils' error() (top-level keys
// named like a secret redacted, the rest of the input as is, the token in the message), a crash printing
// the configuration as Python shows it, a dump of input.json to stderr, and a successful report holding its
// input.json.
const leakyWorker = `#!/usr/bin/env python3
import json, os, sys
job = sys.argv[1]
inp = json.load(open(os.path.join(job, "input", "input.json")))
cfg = inp["config"]
mode = inp["data"]
def write(out):
    open(os.path.join(job, "output", "output.json"), "w").write(json.dumps(out))
if mode == "cortexutils":
    red = dict(inp, config={k: ("REMOVED" if any(p in k.lower() for p in ("key", "password", "secret")) else v) for k, v in cfg.items()})
    write({"success": False, "input": red, "errorMessage": "login with " + cfg["token"] + " refused"})
elif mode == "repr":
    print("configuration:", cfg)
    sys.exit(1)
elif mode == "dump":
    sys.stderr.write(json.dumps(inp))
    sys.exit(2)
else:
    write({"success": True, "summary": {"taxonomies": [{"level": "info", "namespace": "Leak", "predicate": "mode", "value": "echo"}]},
           "full": {"input": inp}, "operations": []})
`

// Issue 30: the credentials an organization configured (an item marked secret, an api_key, a proxy's
// password) never reach a reader, whichever way the worker echoes them; the public defaults beside them stay.
func TestRegressionCredentialsNeverReachReaders(t *testing.T) {
	needPython(t)
	const (
		token     = `tok-"7f3e\é<&>-9c1d` // quotes, backslash, HTML and non-ASCII: escaped differently by each writer
		apiKey    = "AKIA9f8e7d6c5b4a"
		proxyPass = "Pr0xy-Pa55"
	)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "Leaky", "leaky.py"), leakyWorker, 0o755)
	writeFile(t, filepath.Join(root, "Leaky", "Leaky.json"), probeFlavor("Leaky", "Leaky/leaky.py"), 0o644)
	x := newExternalEnv(t, []string{root}, nil, process.Options{}, runner.Options{})
	reader := x.user(t, "soc-reader", "soc", roleRead)
	w := x.enable(t, "analyzer", "Leaky_1_0", map[string]any{"token": token, "api_key": apiKey,
		"proxy_http": "http://squid:" + proxyPass + "@proxy.example:3128"})
	leaks := []string{"7f3e", apiKey, proxyPass, "squid"}
	for _, mode := range []string{"cortexutils", "repr", "dump", "echo"} {
		t.Run(mode, func(t *testing.T) {
			id := x.runRaw(t, "analyzer", w, `{"dataType":"other","data":"`+mode+`"}`)
			x.waitRaw(t, id)
			for _, as := range []*client{reader, x.analyst, x.admin} {
				for _, path := range []string{"/api/job/" + id, "/api/job/" + id + "/report", "/api/job/" + id + "/artifacts",
					"/api/job/" + id + "/waitreport?atMost=1second"} {
					b := string(as.Call(t, http.MethodGet, path, nil).Want(t, http.StatusOK).Body)
					for _, l := range leaks {
						if strings.Contains(b, l) {
							t.Errorf("GET %s shows %q:\n%s", path, l, b)
						}
					}
				}
			}
			j := x.analyst.Call(t, http.MethodGet, "/api/job/"+id+"/report", nil).Want(t, http.StatusOK).Object(t)
			b := mustJSONText(t, j)
			// What the worker echoed is still there, the public defaults included (cortexutils itself redacts
			// the keys named like a secret).
			wants := map[string][]string{"cortexutils": {`\"token\":\"REMOVED\"`, `\"archive_password\":\"REMOVED\"`, `\"max_tlp\":2`},
				"repr": {`'archive_password': 'malware'`, `'tsig_keyval': 'updateme'`, `'token': 'REMOVED'`},
				"dump": {`\"archive_password\": \"malware\"`, `\"wazuh_password\": \"bar\"`, `\"token\": \"REMOVED\"`},
				"echo": {`"archive_password":"malware"`, `"minemeld_password":"password"`}}
			for _, want := range wants[mode] {
				if !strings.Contains(b, want) {
					t.Errorf("%s lost %s:\n%s", mode, want, b)
				}
			}
			switch mode {
			case "cortexutils":
				if j["errorMessage"] != "login with REMOVED refused" {
					t.Errorf("errorMessage %v", j["errorMessage"])
				}
			case "echo":
				full, _ := j["report"].(map[string]any)["full"].(map[string]any)
				cfg, _ := full["input"].(map[string]any)["config"].(map[string]any)
				if cfg["token"] != "REMOVED" || cfg["api_key"] != "REMOVED" || cfg["archive_password"] != "malware" {
					t.Errorf("echoed config %v", cfg)
				}
			}
		})
	}
}
