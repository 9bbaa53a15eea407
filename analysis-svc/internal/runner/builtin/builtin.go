// Package builtin owns the analyzers and responders compiled into analysis-svc: their public definitions
// (Analyzers, Responders), their Go implementations, and the artifact extractor (Extract) that the service
// also uses for auto_extract_artifacts. Built-ins need no network, never run external programs and keep no
// state between jobs: everything a job needs arrives in its analysis.RunInput.
package builtin

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// Fields every built-in definition shares.
const (
	author  = "openir"
	license = "AGPL-V3"
	homeURL = "https://github.com/openir/platform/tree/main/analysis-svc/internal/runner/builtin"
)

// Taxonomy levels of the public report format.
const (
	levelInfo       = "info"
	levelSafe       = "safe"
	levelSuspicious = "suspicious"
	levelMalicious  = "malicious"
)

// Responder data types, as the case server names them.
const (
	typeCase     = "thehive:case"
	typeTask     = "thehive:case_task"
	typeTaskLog  = "thehive:case_task_log"
	typeAlert    = "thehive:alert"
	typeArtifact = "thehive:case_artifact"
)

// DefinitionID is the id of the definition name at version: name_version with every "." turned into "_"
// (File_Info 1.0 → File_Info_1_0), as the public analyzer format derives it.
func DefinitionID(name, version string) string {
	return strings.ReplaceAll(name+"_"+version, ".", "_")
}

// Analyzers returns the definitions of the built-in analyzers, freshly built on each call so a caller may
// change them.
func Analyzers() []analysis.Definition {
	return []analysis.Definition{fileInfoDefinition(), validatorDefinition(), echoDefinition()}
}

// Responders returns the definitions of the built-in responders, freshly built on each call.
func Responders() []analysis.Definition {
	return []analysis.Definition{taggerDefinition(), taskHelperDefinition()}
}

// newDefinition fills the fields all built-ins share.
func newDefinition(kind analysis.Kind, name, version, description string, dataTypes []string,
	items []analysis.ConfigItem, run analysis.RunFunc) analysis.Definition {
	if items == nil {
		items = []analysis.ConfigItem{}
	}
	return analysis.Definition{
		ID:                 DefinitionID(name, version),
		Kind:               kind,
		Name:               name,
		Version:            version,
		Description:        description,
		Author:             author,
		URL:                homeURL,
		License:            license,
		DataTypeList:       dataTypes,
		BaseConfig:         name,
		ConfigurationItems: items,
		Builtin:            run,
	}
}

// taxonomy builds one summary line; an unknown level becomes info, as cortexutils' build_taxonomy does.
func taxonomy(level, namespace, predicate string, value any) analysis.Taxonomy {
	switch level {
	case levelInfo, levelSafe, levelSuspicious, levelMalicious:
	default:
		level = levelInfo
	}
	return analysis.Taxonomy{Level: level, Namespace: namespace, Predicate: predicate, Value: value}
}

// summary wraps taxonomies in the conventional summary object.
func summary(taxonomies []analysis.Taxonomy) map[string]any {
	if taxonomies == nil {
		taxonomies = []analysis.Taxonomy{}
	}
	return map[string]any{"taxonomies": taxonomies}
}

// success is a successful report with empty (not null) artifacts and operations, as cortexutils writes them.
func success(sum, full map[string]any, artifacts []analysis.OutputArtifact, ops []map[string]any) analysis.RunOutput {
	if artifacts == nil {
		artifacts = []analysis.OutputArtifact{}
	}
	if ops == nil {
		ops = []map[string]any{}
	}
	return analysis.RunOutput{Success: true, Summary: sum, Full: full, Artifacts: artifacts, Operations: ops}
}

// failure is a failed analysis: the message and the input as the worker saw it, secrets removed.
func failure(in analysis.RunInput, format string, args ...any) analysis.RunOutput {
	return analysis.RunOutput{Success: false, ErrorMessage: fmt.Sprintf(format, args...), Input: inputJSON(in)}
}

// inputJSON renders in like the protocol's input.json, with secret configuration values removed.
func inputJSON(in analysis.RunInput) string {
	m := inputMap(in)
	b, err := json.Marshal(m)
	if err != nil {
		// Data of a responder is decoded JSON and always marshals; anything else is shown as text.
		m["data"] = fmt.Sprint(in.Data)
		b, _ = json.Marshal(m)
	}
	return string(b)
}

// inputMap is the input.json object of in (config redacted).
func inputMap(in analysis.RunInput) map[string]any {
	params := in.Parameters
	if params == nil {
		params = map[string]any{}
	}
	m := map[string]any{
		"dataType":   in.DataType,
		"tlp":        in.TLP,
		"pap":        in.PAP,
		"message":    in.Message,
		"parameters": params,
		"config":     analysis.RedactConfig(in.Config),
	}
	if in.DataType == "file" {
		m["filename"] = in.Filename
		m["contentType"] = in.ContentType
	} else {
		m["data"] = in.Data
	}
	return m
}

// number reads a JSON number (or a Go numeric, or a numeric string) as float64.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		return f, err == nil
	}
	return 0, false
}

// configString reads a string item; absent, null or not a string → def.
func configString(cfg map[string]any, name, def string) string {
	if s, ok := cfg[name].(string); ok {
		return s
	}
	return def
}

// configBool reads a boolean item; absent, null or not a boolean → def ("true"/"false" strings accepted).
func configBool(cfg map[string]any, name string, def bool) bool {
	switch b := cfg[name].(type) {
	case bool:
		return b
	case string:
		if v, err := strconv.ParseBool(b); err == nil {
			return v
		}
	}
	return def
}

// configNumber reads a number item; absent, null or not a number → def.
func configNumber(cfg map[string]any, name string, def float64) float64 {
	if f, ok := number(cfg[name]); ok {
		return f
	}
	return def
}

// fileSize is the size of the file at path, or -1 when it cannot be read.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return st.Size()
}

// quote shows a user value in an error message, shortened so a huge value cannot flood the report.
func quote(s string) string {
	const max = 200
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}
