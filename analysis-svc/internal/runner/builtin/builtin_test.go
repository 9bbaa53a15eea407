package builtin

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

func TestDefinitionID(t *testing.T) {
	for _, tt := range []struct{ name, version, want string }{
		{"File_Info", "1.0", "File_Info_1_0"},
		{"Yara", "3.0", "Yara_3_0"},
		{"A.B", "2.1.3", "A_B_2_1_3"},
		{"Echo", "1", "Echo_1"},
	} {
		if got := DefinitionID(tt.name, tt.version); got != tt.want {
			t.Errorf("DefinitionID(%q, %q) = %q, want %q", tt.name, tt.version, got, tt.want)
		}
	}
}

func TestDefinitions(t *testing.T) {
	wantIDs := map[string]analysis.Kind{
		"File_Info_1_0": analysis.KindAnalyzer, "Observable_Validator_1_0": analysis.KindAnalyzer,
		"Echo_1_0": analysis.KindAnalyzer, "Tagger_1_0": analysis.KindResponder, "Task_Helper_1_0": analysis.KindResponder,
	}
	safeName := regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	seen := map[string]bool{}
	all := append(Analyzers(), Responders()...)
	for _, d := range all {
		t.Run(d.ID, func(t *testing.T) {
			if kind, ok := wantIDs[d.ID]; !ok || kind != d.Kind {
				t.Errorf("unexpected %s (%s)", d.ID, d.Kind)
			}
			if seen[d.ID] {
				t.Errorf("duplicate id")
			}
			seen[d.ID] = true
			if d.ID != DefinitionID(d.Name, d.Version) || !safeName.MatchString(d.Name) {
				t.Errorf("id %q, name %q, version %q", d.ID, d.Name, d.Version)
			}
			if d.Author != "openir" || d.License != "AGPL-V3" || d.URL == "" || d.Description == "" || d.BaseConfig != d.Name {
				t.Errorf("metadata %+v", d)
			}
			if d.Builtin == nil || d.Command != "" || d.DockerImage != "" {
				t.Errorf("not a built-in")
			}
			if len(d.DataTypeList) == 0 || d.ConfigurationItems == nil {
				t.Errorf("dataTypes %v, items %v", d.DataTypeList, d.ConfigurationItems)
			}
			for _, dt := range d.DataTypeList {
				if (d.Kind == analysis.KindResponder) != strings.HasPrefix(dt, "thehive:") {
					t.Errorf("dataType %q for a %s", dt, d.Kind)
				}
			}
			for _, it := range d.ConfigurationItems {
				if it.Name == "" || it.Description == "" {
					t.Errorf("item %+v", it)
				}
				ok := true
				switch it.Type {
				case "string", "text":
					_, ok = it.DefaultValue.(string)
				case "number":
					_, ok = number(it.DefaultValue)
				case "boolean":
					_, ok = it.DefaultValue.(bool)
				default:
					t.Errorf("item %s: type %q", it.Name, it.Type)
				}
				if it.DefaultValue != nil && !ok {
					t.Errorf("item %s: default %#v is not a %s", it.Name, it.DefaultValue, it.Type)
				}
			}
			if _, err := json.Marshal(d.ConfigurationItems); err != nil {
				t.Error(err)
			}
		})
	}
	if len(seen) != len(wantIDs) {
		t.Errorf("%d definitions, want %d", len(seen), len(wantIDs))
	}
	// Fresh values on each call: a caller's change does not leak into the next call.
	a := Analyzers()
	a[0].DataTypeList[0] = "changed"
	a[0].ConfigurationItems[0].Name = "changed"
	if b := Analyzers(); b[0].DataTypeList[0] == "changed" || b[0].ConfigurationItems[0].Name == "changed" {
		t.Error("definitions share state")
	}
}

// TestDefinitions_runWithDefaults runs every built-in with the configuration an organization gets when it
// enables it without settings (item defaults), on one of its data types.
func TestDefinitions_runWithDefaults(t *testing.T) {
	samples := map[string]any{"ip": "8.8.8.8", "domain": "example.com", "fqdn": "www.example.com",
		"url": "https://example.com/", "mail": "a@example.com", "hash": "d41d8cd98f00b204e9800998ecf8427e",
		"thehive:case": map[string]any{"id": "~1"}, "thehive:case_task": map[string]any{"id": "~2"},
		"thehive:alert": map[string]any{"id": "~3"}, "thehive:case_artifact": map[string]any{"id": "~4"},
		"thehive:case_task_log": map[string]any{"id": "~5"}}
	file := writeFile(t, "attachment1", []byte("see 1.2.3.4\n"))
	for _, d := range append(Analyzers(), Responders()...) {
		cfg := map[string]any{}
		for _, it := range d.ConfigurationItems {
			cfg[it.Name] = it.DefaultValue
		}
		if d.Name == "Task_Helper" {
			cfg["taskTitle"] = "T"
		}
		for _, dt := range d.DataTypeList {
			in := analysis.RunInput{DataType: dt, Data: samples[dt], TLP: 2, PAP: 2, Config: cfg}
			switch dt {
			case "file":
				in.Data, in.File, in.Filename = nil, file, "a.txt"
			case "ip", "domain", "fqdn", "url", "mail", "hash":
			default:
				if in.Data == nil {
					in.Data = "value"
				}
			}
			out, err := d.Builtin(context.Background(), in)
			if err != nil || !out.Success {
				t.Errorf("%s on %s: %+v, %v", d.ID, dt, out, err)
				continue
			}
			if _, err := json.Marshal(map[string]any{"summary": out.Summary, "full": out.Full,
				"artifacts": out.Artifacts, "operations": out.Operations}); err != nil {
				t.Errorf("%s on %s: %v", d.ID, dt, err)
			}
			if out.Artifacts == nil || out.Operations == nil || out.Full == nil || out.Summary == nil {
				t.Errorf("%s on %s: nil parts in %+v", d.ID, dt, out)
			}
		}
	}
}
