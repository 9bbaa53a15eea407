package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

func TestRunTagger(t *testing.T) {
	caseObj := map[string]any{"id": "~123", "_type": "case", "title": "Phishing", "caseId": 7.0}
	task := map[string]any{"id": "~9", "_type": "case_task", "title": "Triage", "assignee": "analyst@org"}
	oldTask := map[string]any{"id": "t1", "title": "Triage", "owner": "old@org"}
	log := map[string]any{"id": "~10", "message": "looked at it"}
	tests := []struct {
		name, dataType string
		data           any
		config         map[string]any
		wantOp         map[string]any
		wantErr        string
	}{
		{name: "case, default tag", dataType: "thehive:case", data: caseObj,
			wantOp: map[string]any{"type": "AddTagToCase", "tag": "tagged-by-responder"}},
		{name: "case, configured tag", dataType: "thehive:case", data: caseObj, config: map[string]any{"tag": " phish "},
			wantOp: map[string]any{"type": "AddTagToCase", "tag": "phish"}},
		{name: "alert", dataType: "thehive:alert", data: map[string]any{"id": "a1"}, config: map[string]any{"tag": "t"},
			wantOp: map[string]any{"type": "AddTagToAlert", "tag": "t"}},
		{name: "observable", dataType: "thehive:case_artifact", data: map[string]any{"dataType": "ip", "data": "1.2.3.4"},
			wantOp: map[string]any{"type": "AddTagToArtifact", "tag": "tagged-by-responder"}},
		{name: "task", dataType: "thehive:case_task", data: task, config: map[string]any{"tag": "t"},
			wantOp: map[string]any{"type": "AddLogToTask", "content": `Tagged "t" by the Tagger responder.`, "owner": "analyst@org"}},
		{name: "task of an older server", dataType: "thehive:case_task", data: oldTask, config: map[string]any{"tag": "t"},
			wantOp: map[string]any{"type": "AddLogToTask", "content": `Tagged "t" by the Tagger responder.`, "owner": "old@org"}},
		{name: "task log", dataType: "thehive:case_task_log", data: log, config: map[string]any{"tag": "t"},
			wantOp: map[string]any{"type": "AddLogToTask", "content": `Tagged "t" by the Tagger responder.`}},
		{name: "null tag uses the default", dataType: "thehive:case", data: caseObj, config: map[string]any{"tag": nil},
			wantOp: map[string]any{"type": "AddTagToCase", "tag": "tagged-by-responder"}},
		{name: "empty tag", dataType: "thehive:case", data: caseObj, config: map[string]any{"tag": "  "},
			wantErr: "the tag to add is empty"},
		{name: "data not an object", dataType: "thehive:case", data: "~123",
			wantErr: "data must be an object (the thehive:case as the case server sends it), not string"},
		{name: "unsupported type", dataType: "ip", data: map[string]any{}, wantErr: `unsupported dataType "ip"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runTagger(context.Background(), analysis.RunInput{Data: tt.data, DataType: tt.dataType, Config: tt.config})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" {
				if out.Success || !strings.Contains(out.ErrorMessage, tt.wantErr) {
					t.Errorf("got %+v, want failure %q", out, tt.wantErr)
				}
				return
			}
			if !out.Success {
				t.Fatalf("failure %q", out.ErrorMessage)
			}
			if got, want := mustJSON(t, out.Operations), mustJSON(t, []map[string]any{tt.wantOp}); got != want {
				t.Errorf("operations = %s, want %s", got, want)
			}
			if got, want := mustJSON(t, out.Full["operations"]), mustJSON(t, []map[string]any{tt.wantOp}); got != want {
				t.Errorf("full.operations = %s, want %s", got, want)
			}
			if out.Full["dataType"] != tt.dataType || out.Full["tag"] != tt.wantOp["tag"] && tt.wantOp["tag"] != nil {
				t.Errorf("full = %v", out.Full)
			}
			if len(out.Artifacts) != 0 || len(out.Summary) != 0 {
				t.Errorf("artifacts %v, summary %v", out.Artifacts, out.Summary)
			}
		})
	}
	out, _ := runTagger(context.Background(), analysis.RunInput{Data: caseObj, DataType: "thehive:case"})
	if got := mustJSON(t, out.Full["target"]); got != `{"_type":"case","caseId":7,"id":"~123","title":"Phishing"}` {
		t.Errorf("target = %s", got)
	}
}

func TestRunTaskHelper(t *testing.T) {
	task := map[string]any{"id": "~9", "title": "Triage", "assignee": "analyst@org"}
	tests := []struct {
		name, dataType string
		config         map[string]any
		wantOps        []map[string]any
		wantSkipped    int
		wantErr        string
	}{
		{name: "create task from a case", dataType: "thehive:case",
			config:  map[string]any{"taskTitle": "Contain", "taskDescription": "Isolate the host"},
			wantOps: []map[string]any{{"type": "CreateTask", "title": "Contain", "description": "Isolate the host"}}},
		{name: "everything on a task", dataType: "thehive:case_task",
			config: map[string]any{"taskTitle": "Follow-up", "logMessage": "done", "closeTask": true},
			wantOps: []map[string]any{
				{"type": "CreateTask", "title": "Follow-up", "description": ""},
				{"type": "AddLogToTask", "content": "done", "owner": "analyst@org"},
				{"type": "CloseTask"},
			}},
		{name: "log and close from a log", dataType: "thehive:case_task_log",
			config:  map[string]any{"logMessage": "more", "closeTask": "true"},
			wantOps: []map[string]any{{"type": "AddLogToTask", "content": "more", "owner": "analyst@org"}, {"type": "CloseTask"}}},
		{name: "task steps skipped on a case", dataType: "thehive:case",
			config:      map[string]any{"taskTitle": "T", "logMessage": "x", "closeTask": true},
			wantOps:     []map[string]any{{"type": "CreateTask", "title": "T", "description": ""}},
			wantSkipped: 2},
		{name: "only task steps on a case", dataType: "thehive:case", config: map[string]any{"closeTask": true},
			wantErr: "nothing to do: closeTask: CloseTask needs a task or a task log, not a thehive:case"},
		{name: "nothing configured", dataType: "thehive:case_task", config: map[string]any{"taskTitle": "", "closeTask": false},
			wantErr: "nothing to do: configure taskTitle, logMessage or closeTask"},
		{name: "alert unsupported", dataType: "thehive:alert", config: map[string]any{"taskTitle": "T"},
			wantErr: `unsupported dataType "thehive:alert"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runTaskHelper(context.Background(), analysis.RunInput{Data: task, DataType: tt.dataType, Config: tt.config})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" {
				if out.Success || out.ErrorMessage != tt.wantErr {
					t.Errorf("got %+v, want failure %q", out, tt.wantErr)
				}
				return
			}
			if !out.Success {
				t.Fatalf("failure %q", out.ErrorMessage)
			}
			if got, want := mustJSON(t, out.Operations), mustJSON(t, tt.wantOps); got != want {
				t.Errorf("operations = %s, want %s", got, want)
			}
			if n := len(out.Full["skipped"].([]any)); n != tt.wantSkipped {
				t.Errorf("skipped = %v", out.Full["skipped"])
			}
		})
	}
	out, _ := runTaskHelper(context.Background(), analysis.RunInput{Data: []any{}, DataType: "thehive:case"})
	if out.Success || !strings.HasPrefix(out.ErrorMessage, "data must be an object") {
		t.Errorf("got %+v", out)
	}
}
