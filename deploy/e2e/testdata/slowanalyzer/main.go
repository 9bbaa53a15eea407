// Command slowanalyzer is an external analyzer of the public job-folder protocol, for the container suite:
// it sleeps config.sleep_ms milliseconds (so a job is still running when the test stops its server), then
// reports its input. It is built static (CGO_ENABLED=0) because it runs in the FROM scratch image.
//
//	slowanalyzer <job folder>    reads <job folder>/input/input.json, writes <job folder>/output/output.json
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

type input struct {
	Data     any            `json:"data"`
	DataType string         `json:"dataType"`
	Config   map[string]any `json:"config"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: slowanalyzer <job folder>")
		os.Exit(2)
	}
	dir := os.Args[1]
	out := map[string]any{"success": false, "errorMessage": "no input"}
	var in input
	b, err := os.ReadFile(filepath.Join(dir, "input", "input.json"))
	if err == nil {
		err = json.Unmarshal(b, &in)
	}
	if err == nil {
		ms := 5000.0
		if v, ok := in.Config["sleep_ms"].(float64); ok && v >= 0 {
			ms = v
		}
		start := time.Now()
		time.Sleep(time.Duration(ms) * time.Millisecond)
		slept := time.Since(start).Round(time.Millisecond)
		out = map[string]any{
			"success": true,
			"summary": map[string]any{"taxonomies": []any{map[string]any{
				"level": "info", "namespace": "Slow", "predicate": "Slept", "value": slept.String()}}},
			"full":      map[string]any{"data": in.Data, "dataType": in.DataType, "sleptMs": slept.Milliseconds()},
			"artifacts": []any{},
		}
	} else {
		out["errorMessage"] = err.Error()
	}
	b, _ = json.Marshal(out)
	if err := os.WriteFile(filepath.Join(dir, "output", "output.json"), b, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
