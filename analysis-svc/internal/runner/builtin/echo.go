package builtin

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

const echoNamespace = "Echo"

// maxEchoSleep bounds parameters.sleep (the job timeout normally ends a long sleep first).
const maxEchoSleep = 24 * time.Hour

func echoDefinition() analysis.Definition {
	return newDefinition(analysis.KindAnalyzer, "Echo", "1.0",
		"Test analyzer: reports its own input (secrets removed). Configuration steers the report (summary "+
			"level, input returned as an artifact, a tag operation); parameters.sleep (milliseconds) delays it "+
			"and parameters.fail makes it fail with that message.",
		[]string{"autonomous-system", "domain", "file", "filename", "fqdn", "hash", "hostname", "ip", "mail",
			"mail-subject", "other", "regexp", "registry", "uri_path", "url", "user-agent"},
		[]analysis.ConfigItem{
			{Name: "level", Description: "Level of the summary lines: info, safe, suspicious or malicious",
				Type: "string", DefaultValue: levelInfo},
			{Name: "artifacts", Description: "Return the input observable as an artifact",
				Type: "boolean", DefaultValue: false},
			{Name: "tag", Description: "When set, the report carries an AddTagToArtifact operation with this tag",
				Type: "string"},
		},
		runEcho)
}

// runEcho is Echo. A cancelled context (job timeout, job deleted) ends a sleep at once and is returned as
// the error: the job did not finish, it was stopped.
func runEcho(ctx context.Context, in analysis.RunInput) (analysis.RunOutput, error) {
	if ms, ok := number(in.Parameters["sleep"]); ok && ms > 0 {
		d := maxEchoSleep
		if ms < float64(maxEchoSleep/time.Millisecond) {
			d = time.Duration(math.Round(ms * float64(time.Millisecond)))
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return analysis.RunOutput{}, ctx.Err()
		case <-t.C:
		}
	}
	if err := ctx.Err(); err != nil {
		return analysis.RunOutput{}, err
	}
	switch f := in.Parameters["fail"].(type) {
	case nil:
	case bool:
		if f {
			return failure(in, "failure requested by parameters.fail"), nil
		}
	case string:
		if f != "" {
			return failure(in, "%s", f), nil
		}
	default:
		return failure(in, "%v", f), nil
	}

	level := configString(in.Config, "level", levelInfo)
	full := inputMap(in)
	shown := fmt.Sprint(in.Data)
	if in.DataType == "file" {
		shown = in.Filename
		full["size"] = fileSize(in.File)
	} else if s, ok := in.Data.(string); ok {
		shown = s
	}
	taxes := []analysis.Taxonomy{
		taxonomy(level, echoNamespace, "DataType", in.DataType),
		taxonomy(level, echoNamespace, "Data", shorten(shown, 64)),
	}
	var artifacts []analysis.OutputArtifact
	if configBool(in.Config, "artifacts", false) {
		if in.DataType == "file" {
			// The input file itself: the service copies it into the attachment store while the job's
			// input still exists, as it does for a process worker's output files.
			artifacts = append(artifacts, analysis.OutputArtifact{DataType: "file", File: in.File,
				Filename: in.Filename, ContentType: in.ContentType, Tags: []string{"echo"}})
		} else {
			artifacts = append(artifacts, analysis.OutputArtifact{DataType: in.DataType, Data: shown,
				Tags: []string{"echo"}})
		}
	}
	var ops []map[string]any
	if tag := configString(in.Config, "tag", ""); tag != "" {
		ops = append(ops, map[string]any{"type": "AddTagToArtifact", "tag": tag})
	}
	return success(summary(taxes), full, artifacts, ops), nil
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
