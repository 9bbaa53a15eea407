package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openir/platform/analysis-svc/internal/analysis"
)

// defaultTag is the Tagger's tag when none is configured.
const defaultTag = "tagged-by-responder"

func taggerDefinition() analysis.Definition {
	return newDefinition(analysis.KindResponder, "Tagger", "1.0",
		"Tag the case, alert or observable the responder runs on (AddTagTo… operation); on a task or a task "+
			"log, log the tag in the task instead (AddLogToTask).",
		[]string{typeCase, typeAlert, typeArtifact, typeTask, typeTaskLog},
		[]analysis.ConfigItem{
			{Name: "tag", Description: "Tag to add", Type: "string", DefaultValue: defaultTag},
		},
		runTagger)
}

func taskHelperDefinition() analysis.Definition {
	return newDefinition(analysis.KindResponder, "Task_Helper", "1.0",
		"Create a task in the case (CreateTask), add a log to the task (AddLogToTask) and/or close it "+
			"(CloseTask), as configured.",
		[]string{typeCase, typeArtifact, typeTask, typeTaskLog},
		[]analysis.ConfigItem{
			{Name: "taskTitle", Description: "Title of the task to create in the case (none when empty)", Type: "string"},
			{Name: "taskDescription", Description: "Description of the task to create", Type: "string"},
			{Name: "logMessage", Description: "Log to add to the task the responder runs on (none when empty)", Type: "string"},
			{Name: "closeTask", Description: "Close the task the responder runs on", Type: "boolean", DefaultValue: false},
		},
		runTaskHelper)
}

// responderObject is the case-server object a responder runs on.
func responderObject(in analysis.RunInput) (map[string]any, bool) {
	obj, ok := in.Data.(map[string]any)
	return obj, ok
}

// isTaskType tells the data types whose operations may act on a task.
func isTaskType(dataType string) bool { return dataType == typeTask || dataType == typeTaskLog }

// target keeps the identifying fields of the object a responder ran on, for its report.
func target(obj map[string]any) map[string]any {
	t := map[string]any{}
	for _, k := range []string{"id", "_id", "_type", "caseId", "number", "title", "dataType", "data", "message"} {
		switch v := obj[k].(type) {
		case string:
			t[k] = shorten(v, 200)
		case float64, int, int64, bool, json.Number:
			t[k] = v
		}
	}
	return t
}

// ownerOf is the user a task log is attributed to: the task's assignee (or owner in older case servers).
func ownerOf(obj map[string]any) string {
	for _, k := range []string{"assignee", "owner"} {
		if s, ok := obj[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// addLogToTask builds the AddLogToTask operation, with an owner when one is known.
func addLogToTask(content, owner string) map[string]any {
	op := map[string]any{"type": "AddLogToTask", "content": content}
	if owner != "" {
		op["owner"] = owner
	}
	return op
}

// responderReport is a responder's success: no summary, no artifacts, the operations, and a full report
// saying what was done.
func responderReport(in analysis.RunInput, obj map[string]any, message string, ops []map[string]any,
	extra map[string]any) analysis.RunOutput {
	list := make([]any, 0, len(ops))
	for _, op := range ops {
		list = append(list, op)
	}
	full := map[string]any{
		"message":    message,
		"dataType":   in.DataType,
		"target":     target(obj),
		"operations": list,
	}
	for k, v := range extra {
		full[k] = v
	}
	return success(map[string]any{}, full, nil, ops)
}

// runTagger is Tagger.
func runTagger(ctx context.Context, in analysis.RunInput) (analysis.RunOutput, error) {
	if err := ctx.Err(); err != nil {
		return analysis.RunOutput{}, err
	}
	obj, ok := responderObject(in)
	if !ok {
		return failure(in, "data must be an object (the %s as the case server sends it), not %T", in.DataType, in.Data), nil
	}
	tag := strings.TrimSpace(configString(in.Config, "tag", defaultTag))
	if tag == "" {
		return failure(in, "the tag to add is empty (config.tag)"), nil
	}
	var op map[string]any
	switch in.DataType {
	case typeCase:
		op = map[string]any{"type": "AddTagToCase", "tag": tag}
	case typeAlert:
		op = map[string]any{"type": "AddTagToAlert", "tag": tag}
	case typeArtifact:
		op = map[string]any{"type": "AddTagToArtifact", "tag": tag}
	case typeTask, typeTaskLog:
		op = addLogToTask(fmt.Sprintf("Tagged %q by the Tagger responder.", tag), ownerOf(obj))
	default:
		return failure(in, "unsupported dataType %q", in.DataType), nil
	}
	msg := fmt.Sprintf("%s: tag %q", op["type"], tag)
	return responderReport(in, obj, msg, []map[string]any{op}, map[string]any{"tag": tag}), nil
}

// runTaskHelper is Task_Helper. An operation that cannot apply to the object (closing a task from a case)
// is skipped and said so; a run that is left with nothing to do fails, so a misconfiguration shows.
func runTaskHelper(ctx context.Context, in analysis.RunInput) (analysis.RunOutput, error) {
	if err := ctx.Err(); err != nil {
		return analysis.RunOutput{}, err
	}
	obj, ok := responderObject(in)
	if !ok {
		return failure(in, "data must be an object (the %s as the case server sends it), not %T", in.DataType, in.Data), nil
	}
	switch in.DataType {
	case typeCase, typeArtifact, typeTask, typeTaskLog:
	default:
		return failure(in, "unsupported dataType %q", in.DataType), nil
	}
	title := strings.TrimSpace(configString(in.Config, "taskTitle", ""))
	description := configString(in.Config, "taskDescription", "")
	logMessage := configString(in.Config, "logMessage", "")
	closeTask := configBool(in.Config, "closeTask", false)

	var ops []map[string]any
	skipped := []any{}
	if title != "" {
		ops = append(ops, map[string]any{"type": "CreateTask", "title": title, "description": description})
	}
	if strings.TrimSpace(logMessage) != "" {
		if isTaskType(in.DataType) {
			ops = append(ops, addLogToTask(logMessage, ownerOf(obj)))
		} else {
			skipped = append(skipped, "logMessage: AddLogToTask needs a task or a task log, not a "+in.DataType)
		}
	}
	if closeTask {
		if isTaskType(in.DataType) {
			ops = append(ops, map[string]any{"type": "CloseTask"})
		} else {
			skipped = append(skipped, "closeTask: CloseTask needs a task or a task log, not a "+in.DataType)
		}
	}
	if len(ops) == 0 {
		if len(skipped) > 0 {
			return failure(in, "nothing to do: %s", joinAny(skipped, "; ")), nil
		}
		return failure(in, "nothing to do: configure taskTitle, logMessage or closeTask"), nil
	}
	types := make([]string, len(ops))
	for i, op := range ops {
		types[i] = op["type"].(string)
	}
	return responderReport(in, obj, strings.Join(types, ", "), ops, map[string]any{"skipped": skipped}), nil
}

// joinAny joins strings held in a []any.
func joinAny(list []any, sep string) string {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, sep)
}
