package catalog

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func ids(defs []analysis.Definition) []string {
	out := []string{}
	for _, d := range defs {
		out = append(out, d.ID)
	}
	return out
}

func byID(defs []analysis.Definition, id string) (analysis.Definition, bool) {
	for _, d := range defs {
		if d.ID == id {
			return d, true
		}
	}
	return analysis.Definition{}, false
}

const yara = `{
  "name": "Yara", "author": "Nils Kuhnert", "license": "AGPL-V3", "url": "https://github.com/x", "version": "3.0",
  "description": "Check files against YARA rules", "dataTypeList": ["file"], "command": "Yara/yara_analyzer.py",
  "baseConfig": "YaraBase",
  "configurationItems": [
    {"name": "rules", "description": "rules folder", "type": "string", "multi": true, "required": false},
    {"name": "files_limit", "description": "limit", "type": "number", "required": true, "defaultValue": 400},
    {"name": "token", "description": "GitHub token", "type": "string"}
  ],
  "config": {"check_tlp": true, "max_tlp": 2},
  "registration_required": false, "service_logo": {"path": "assets/x.png", "caption": "logo"}
}`

func def(name, extra string) string {
	return `{"name": "` + name + `", "version": "1.0", "author": "a", "url": "u", "license": "l", "description": "d"` + extra + `}`
}

func TestLoad(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "Yara", "yara_analyzer.py"), "#!/usr/bin/env python3\n", 0o755)
	write(t, filepath.Join(root, "Yara", "Yara.json"), yara, 0o644)
	write(t, filepath.Join(root, "Yara", "README.md"), "not a definition", 0o644)
	write(t, filepath.Join(root, "VT", "vt.py"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(root, "VT", "VT_Get.json"), def("VirusTotal_GetReport", `, "version": "3.1", "command": "VT/vt.py", "dataTypeList": ["hash", "file"]`), 0o644)
	write(t, filepath.Join(root, "VT", "VT_Scan.json"), def("VirusTotal_Scan", `, "command": "VT/vt.py", "config": {"service": "scan"}`), 0o644)
	write(t, filepath.Join(root, "Array", "catalog.json"), `[`+
		def("Docker", `, "dockerImage": "ghcr.io/thehive-project/docker:1"`)+`, `+
		`{"name": "NoAuthor", "version": "1.0", "url": "u", "license": "l", "description": "d", "command": "VT/vt.py"}, `+
		`"not an object", `+
		def("Both", `, "dockerImage": "img:1", "command": "Array/missing.py"`)+`]`, 0o644)
	write(t, filepath.Join(root, "Bad", "bad.json"), `{"name": "Bad",`, 0o644)
	write(t, filepath.Join(root, "Bad", "scalar.json"), `42`, 0o644)
	write(t, filepath.Join(root, "Escape", "escape.json"), def("Escape", `, "command": "../../bin/sh"`), 0o644)
	write(t, filepath.Join(root, "Escape", "abs.json"), def("Absolute", `, "command": "/bin/sh"`), 0o644)
	write(t, filepath.Join(root, "Escape", "root.json"), def("Root", `, "command": "."`), 0o644)
	write(t, filepath.Join(root, "Escape", "sneaky.json"), def("Sneaky", `, "command": "VT/../../outside.sh"`), 0o644)
	write(t, filepath.Join(root, "Items", "items.json"), def("Items", `, "command": "VT/vt.py", "configurationItems": [
		{"name": "ok", "description": "fine", "type": "boolean", "defaultValue": true},
		{"name": "bad_type", "description": "x", "type": "int"},
		{"name": "no_description", "type": "string"},
		{"name": "ok", "description": "again", "type": "string"},
		{"description": "no name", "type": "string"},
		{"name": "multi_str", "description": "x", "type": "string", "multi": "yes"},
		{"name": "text", "description": "certs", "type": "text"}]`), 0o644)
	write(t, filepath.Join(root, "Items", "notarray.json"), def("ItemsObject", `, "command": "VT/vt.py", "configurationItems": {"name": "x"}`), 0o644)
	write(t, filepath.Join(root, "Wrong", "types.json"), `[`+
		def("DataTypesString", `, "command": "VT/vt.py", "dataTypeList": "ip"`)+`, `+
		def("ConfigArray", `, "command": "VT/vt.py", "config": []`)+`, `+
		def("CommandNumber", `, "command": 7`)+`, `+
		`{"name": "VersionNumber", "version": 1, "author": "a", "url": "u", "license": "l", "description": "d", "command": "VT/vt.py"}, `+
		`{"name": "BlankVersion", "version": " ", "author": "a", "url": "u", "license": "l", "description": "d", "command": "VT/vt.py"}, `+
		def("Space name", `, "command": "VT/vt.py"`)+`, `+
		def("Bad/Name", `, "command": "VT/vt.py"`)+`, `+
		def("NoRun", ``)+`, `+
		def("Nulls", `, "command": "VT/vt.py", "dataTypeList": null, "config": null, "configurationItems": null, "baseConfig": null, "dockerImage": null`)+`]`, 0o644)
	write(t, filepath.Join(root, "Dup", "a.json"), def("Dup", `, "command": "VT/vt.py", "description": "first"`), 0o644)
	write(t, filepath.Join(root, "Dup", "b.json"), def("Dup", `, "command": "VT/vt.py", "description": "second"`), 0o644)
	write(t, filepath.Join(root, "Deep", "nested", "deep.json"), def("Deep", `, "command": "VT/vt.py"`), 0o644)
	write(t, filepath.Join(root, "top.json"), def("Top", `, "command": "VT/vt.py"`), 0o644)

	var logs bytes.Buffer
	defs, err := Load([]string{root}, analysis.KindAnalyzer, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []string{"Docker_1_0", "Both_1_0", "Dup_1_0", "Items_1_0", "ItemsObject_1_0", "VirusTotal_GetReport_3_1",
		"VirusTotal_Scan_1_0", "Nulls_1_0", "Yara_3_0"}
	if got := ids(defs); !reflect.DeepEqual(got, want) {
		t.Fatalf("ids = %v\nwant %v\nlog:\n%s", got, want, logs.String())
	}

	t.Run("full definition", func(t *testing.T) {
		d, _ := byID(defs, "Yara_3_0")
		wantDef := analysis.Definition{ID: "Yara_3_0", Kind: analysis.KindAnalyzer, Name: "Yara", Version: "3.0",
			Description: "Check files against YARA rules", Author: "Nils Kuhnert", URL: "https://github.com/x",
			License: "AGPL-V3", DataTypeList: []string{"file"}, BaseConfig: "YaraBase",
			ConfigurationItems: []analysis.ConfigItem{
				{Name: "rules", Description: "rules folder", Type: "string", Multi: true},
				{Name: "files_limit", Description: "limit", Type: "number", Required: true, DefaultValue: json.Number("400")},
				{Name: "token", Description: "GitHub token", Type: "string"},
			},
			Config:  map[string]any{"check_tlp": true, "max_tlp": json.Number("2")}, // numbers as written
			Command: filepath.Join(root, "Yara", "yara_analyzer.py"),
			Source:  filepath.Join(root, "Yara", "Yara.json"),
		}
		if !reflect.DeepEqual(d, wantDef) {
			t.Errorf("definition =\n%+v\nwant\n%+v", d, wantDef)
		}
	})

	t.Run("defaults", func(t *testing.T) {
		d, _ := byID(defs, "Docker_1_0")
		if d.BaseConfig != "Docker" || d.DockerImage != "ghcr.io/thehive-project/docker:1" || d.Command != "" ||
			d.DataTypeList == nil || len(d.DataTypeList) != 0 || d.Config == nil || len(d.Config) != 0 ||
			d.ConfigurationItems == nil || len(d.ConfigurationItems) != 0 {
			t.Errorf("docker definition = %+v", d)
		}
		n, _ := byID(defs, "Nulls_1_0")
		if n.BaseConfig != "Nulls" || n.DataTypeList == nil || n.Config == nil || n.ConfigurationItems == nil {
			t.Errorf("nulls definition = %+v", n)
		}
		s, _ := byID(defs, "VirusTotal_Scan_1_0")
		if !reflect.DeepEqual(s.Config, map[string]any{"service": "scan"}) || s.Command != filepath.Join(root, "VT", "vt.py") {
			t.Errorf("scan definition = %+v", s)
		}
	})

	t.Run("invalid configuration items are skipped alone", func(t *testing.T) {
		d, _ := byID(defs, "Items_1_0")
		want := []analysis.ConfigItem{
			{Name: "ok", Description: "fine", Type: "boolean", DefaultValue: true},
			{Name: "text", Description: "certs", Type: "text"},
		}
		if !reflect.DeepEqual(d.ConfigurationItems, want) {
			t.Errorf("items = %+v", d.ConfigurationItems)
		}
		o, _ := byID(defs, "ItemsObject_1_0")
		if len(o.ConfigurationItems) != 0 {
			t.Errorf("items = %+v", o.ConfigurationItems)
		}
	})

	t.Run("first duplicate wins", func(t *testing.T) {
		d, _ := byID(defs, "Dup_1_0")
		if d.Description != "first" {
			t.Errorf("description = %q", d.Description)
		}
	})

	t.Run("warnings", func(t *testing.T) {
		for _, w := range []string{
			"invalid JSON", "neither an object nor an array", "missing author", "not an object",
			`outside the analyzers root`, "duplicate definition id", "dataTypeList has the wrong type",
			"config has the wrong type", "command has the wrong type", "version has the wrong type",
			"blank name or version", "not allowed in an id", "nothing to run", "configurationItems is not an array",
			"definition command not found",
		} {
			if !strings.Contains(logs.String(), w) {
				t.Errorf("no warning %q in\n%s", w, logs.String())
			}
		}
		if n := strings.Count(logs.String(), "outside the analyzers root"); n != 4 {
			t.Errorf("%d escape warnings, want 4", n)
		}
		if n := strings.Count(logs.String(), "configuration item skipped"); n != 5 {
			t.Errorf("%d item warnings, want 5", n)
		}
	})
}

func TestLoad_paths(t *testing.T) {
	t.Run("single file, its root two levels up", func(t *testing.T) {
		base := t.TempDir()
		file := filepath.Join(base, "defs", "one.json")
		write(t, filepath.Join(base, "defs", "run.sh"), "#!/bin/sh\n", 0o755)
		write(t, file, `[`+def("One", `, "command": "defs/run.sh"`)+`, `+def("Two", `, "command": "../escape.sh"`)+`]`, 0o644)
		defs, err := Load([]string{file}, analysis.KindResponder, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(defs) != 1 || defs[0].ID != "One_1_0" || defs[0].Kind != analysis.KindResponder ||
			defs[0].Command != filepath.Join(base, "defs", "run.sh") {
			t.Errorf("defs = %+v", defs)
		}
	})

	t.Run("several paths, first wins across them", func(t *testing.T) {
		a, b := t.TempDir(), t.TempDir()
		write(t, filepath.Join(a, "X", "x.json"), def("Same", `, "dockerImage": "a:1"`), 0o644)
		write(t, filepath.Join(b, "X", "x.json"), `[`+def("Same", `, "dockerImage": "b:1"`)+`, `+def("Other", `, "dockerImage": "o:1"`)+`]`, 0o644)
		defs, err := Load([]string{a, "", b}, analysis.KindAnalyzer, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(defs); !reflect.DeepEqual(got, []string{"Same_1_0", "Other_1_0"}) || defs[0].DockerImage != "a:1" {
			t.Errorf("defs = %+v", defs)
		}
	})

	t.Run("missing path and URLs are warnings", func(t *testing.T) {
		var logs bytes.Buffer
		defs, err := Load([]string{filepath.Join(t.TempDir(), "nope"), "https://catalogs.example/analyzers.json"},
			analysis.KindAnalyzer, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil || len(defs) != 0 {
			t.Errorf("defs = %v, err = %v", defs, err)
		}
		if !strings.Contains(logs.String(), "does not exist") || !strings.Contains(logs.String(), "URLs are not fetched") {
			t.Errorf("log:\n%s", logs.String())
		}
	})

	t.Run("file URL", func(t *testing.T) {
		base := t.TempDir()
		file := filepath.Join(base, "c", "catalog.json")
		write(t, file, def("Url", `, "dockerImage": "u:1"`), 0o644)
		defs, err := Load([]string{"file://" + file}, analysis.KindAnalyzer, nil)
		if err != nil || len(defs) != 1 {
			t.Errorf("defs = %v, err = %v", defs, err)
		}
	})

	t.Run("unreadable path is an error, other definitions still load", func(t *testing.T) {
		base := t.TempDir()
		fifo := filepath.Join(base, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		good := filepath.Join(base, "good")
		write(t, filepath.Join(good, "G", "g.json"), def("Good", `, "dockerImage": "g:1"`), 0o644)
		defs, err := Load([]string{fifo, good}, analysis.KindAnalyzer, nil)
		if err == nil || !strings.Contains(err.Error(), "neither a file nor a directory") {
			t.Errorf("err = %v", err)
		}
		if len(defs) != 1 || defs[0].ID != "Good_1_0" {
			t.Errorf("defs = %+v", defs)
		}
	})
}
