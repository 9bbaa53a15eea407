package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// A null boolean is refused alike on every record of case-svc (record.ChangeFlag): 400
// AttributeCheckingError naming the field, and the record keeps its value (true here, so a null read as false
// would show). A task's order, an integer, refuses a null the same way.
func TestUpdate_NullBooleansRefusedOnEveryRecord(t *testing.T) {
	tm := newTeam(t)
	cs := tm.analyst.newCase(t, map[string]any{"flag": true})
	caseID := cs.Str(t, "id")
	task := tm.analyst.Call(t, http.MethodPost, "/api/case/"+caseID+"/task", map[string]any{"title": "t", "flag": true, "order": 3}).
		Want(t, 201).Object(t)
	obs := tm.analyst.observables(t, "/api/case/"+caseID+"/artifact", map[string]any{"dataType": "ip", "data": "10.0.0.9",
		"ioc": true, "sighted": true, "ignoreSimilarity": true})[0]
	alert := tm.analyst.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "external", "source": "siem",
		"sourceRef": "null-flags", "title": "a", "description": "d", "follow": true}).Want(t, 201).Object(t)
	tpl := tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "nulls", "flag": true}).
		Want(t, 201).Object(t)
	field := tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "nullable", "type": "string",
		"mandatory": true}).Want(t, 201).Object(t)
	rule := tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": "nulls", "event": "caseCreated",
		"enabled": true, "dryRun": true, "actions": []any{map[string]any{"type": "addTags", "tags": []string{"x"}}}}).
		Want(t, 201).Object(t)

	for _, c := range []struct {
		who   *client
		path  string
		field string
		want  any
	}{
		{tm.analyst, "/api/case/" + caseID, "flag", true},
		{tm.analyst, "/api/case/task/" + task.Str(t, "id"), "flag", true},
		{tm.analyst, "/api/case/task/" + task.Str(t, "id"), "order", float64(3)},
		{tm.analyst, "/api/case/artifact/" + obs.Str(t, "id"), "ioc", true},
		{tm.analyst, "/api/case/artifact/" + obs.Str(t, "id"), "sighted", true},
		{tm.analyst, "/api/case/artifact/" + obs.Str(t, "id"), "ignoreSimilarity", true},
		{tm.analyst, "/api/alert/" + alert.Str(t, "id"), "follow", true},
		{tm.orgAdmin, "/api/case/template/" + tpl.Str(t, "id"), "flag", true},
		{tm.admin, "/api/customField/" + field.Str(t, "id"), "mandatory", true},
		{tm.orgAdmin, "/api/automation/rule/" + rule.Str(t, "id"), "enabled", true},
		{tm.orgAdmin, "/api/automation/rule/" + rule.Str(t, "id"), "dryRun", true},
		{tm.admin, "/api/user/ana", "locked", false},
	} {
		t.Run(strings.TrimPrefix(c.path, "/api/")+" "+c.field, func(t *testing.T) {
			msg := c.who.Call(t, http.MethodPatch, c.path, map[string]any{c.field: nil}).WantError(t, 400, "AttributeCheckingError")
			if !strings.Contains(msg, c.field) {
				t.Errorf("message %q does not name %s", msg, c.field)
			}
			got := c.who.Call(t, http.MethodGet, c.path, nil).Want(t, 200).Object(t)
			if fmt.Sprint(got[c.field]) != fmt.Sprint(c.want) {
				t.Errorf("%s after the refused null = %v, want %v", c.field, got[c.field], c.want)
			}
		})
	}
	// Templates and rules are created from the input of their updates: a null flag is refused there too.
	tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": "null-create", "flag": nil}).
		WantError(t, 400, "AttributeCheckingError")
	tm.orgAdmin.Call(t, http.MethodPost, "/api/automation/rule", map[string]any{"name": "null-create", "event": "caseCreated",
		"enabled": nil, "actions": []any{map[string]any{"type": "addTags", "tags": []string{"x"}}}}).WantError(t, 400, "AttributeCheckingError")
	// The user is still active: its key still works.
	tm.analyst.Call(t, http.MethodGet, "/api/user/current", nil).Want(t, 200)
}
