package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// Every write route against every profile: the holder of the permission succeeds, everyone else gets 403
// AuthorizationError naming it. The platform administrator works in the admin organisation, so on the
// organisation routes below it acts as a non-member.
func TestPermissions(t *testing.T) {
	tm := newTeam(t)
	tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": "cf", "type": "string"}).Want(t, 201)
	profiles := map[string]*client{"admin": tm.admin, "org-admin": tm.orgAdmin, "analyst": tm.analyst, "read-only": tm.readOnly}
	holders := map[string][]string{
		"manageCase":         {"org-admin", "analyst"},
		"manageTask":         {"org-admin", "analyst"},
		"manageCaseTemplate": {"org-admin"},
		"manageCustomField":  {"admin", "org-admin"},
		// Definitions every organisation shares (issue 15).
		"manageCustomField as a platform administrator": {"admin"},
		"manageUser":         {"admin", "org-admin"},
		"manageOrganisation": {"admin"},
		"manageObservable":   {"org-admin", "analyst"},
		"manageAlert":        {"org-admin", "analyst"},
	}
	n := 0
	unique := func(p string) string { n++; return fmt.Sprintf("%s%d", p, n) }
	newCase := func(t *testing.T) string { return tm.orgAdmin.newCase(t, nil).Str(t, "id") }
	newTask := func(t *testing.T) string {
		return tm.orgAdmin.Call(t, http.MethodPost, "/api/case/"+newCase(t)+"/task", map[string]any{"title": "t"}).
			Want(t, 201).Object(t).Str(t, "id")
	}
	newLog := func(t *testing.T) string {
		return tm.orgAdmin.Call(t, http.MethodPost, "/api/case/task/"+newTask(t)+"/log", map[string]any{"message": "m"}).
			Want(t, 201).Object(t).Str(t, "id")
	}
	newTemplate := func(t *testing.T) string {
		return tm.orgAdmin.Call(t, http.MethodPost, "/api/case/template", map[string]any{"name": unique("tpl")}).
			Want(t, 201).Object(t).Str(t, "id")
	}
	newField := func(t *testing.T) string {
		return tm.admin.Call(t, http.MethodPost, "/api/customField", map[string]any{"name": unique("f"), "type": "string"}).
			Want(t, 201).Object(t).Str(t, "id")
	}
	newObservable := func(t *testing.T) string {
		return tm.orgAdmin.Call(t, http.MethodPost, "/api/case/"+newCase(t)+"/artifact", map[string]any{"dataType": "ip",
			"data": unique("10.1.")}).Want(t, 201).List(t)[0].Str(t, "id")
	}
	newAlert := func(t *testing.T) string {
		return tm.orgAdmin.Call(t, http.MethodPost, "/api/alert", map[string]any{"type": "t", "source": "s",
			"sourceRef": unique("ref"), "title": "t", "description": "d"}).Want(t, 201).Object(t).Str(t, "id")
	}
	routes := []struct {
		name, method string
		perms        []string // all needed; a refusal names the first one missing
		path         func(t *testing.T) string
		body         func() any
		ok           int
	}{
		{"create case", "POST", []string{"manageCase"}, func(*testing.T) string { return "/api/case" },
			func() any { return map[string]any{"title": "t", "description": "d"} }, 201},
		{"update case", "PATCH", []string{"manageCase"}, func(t *testing.T) string { return "/api/case/" + newCase(t) },
			func() any { return map[string]any{"title": "x"} }, 200},
		{"close case", "PATCH", []string{"manageCase"}, func(t *testing.T) string { return "/api/case/" + newCase(t) },
			func() any { return map[string]any{"status": "Resolved", "resolutionStatus": "FalsePositive"} }, 200},
		{"delete case", "DELETE", []string{"manageCase"}, func(t *testing.T) string { return "/api/case/" + newCase(t) }, nil, 204},
		{"case custom field", "POST", []string{"manageCase", "manageCustomField"}, func(*testing.T) string { return "/api/case" },
			func() any {
				return map[string]any{"title": "t", "description": "d", "customFields": map[string]any{"cf": map[string]any{"string": "v"}}}
			}, 201},
		{"create task", "POST", []string{"manageTask"}, func(t *testing.T) string { return "/api/case/" + newCase(t) + "task" },
			func() any { return map[string]any{"title": "t"} }, 201},
		{"create task (slash)", "POST", []string{"manageTask"}, func(t *testing.T) string { return "/api/case/" + newCase(t) + "/task" },
			func() any { return map[string]any{"title": "t"} }, 201},
		{"update task", "PATCH", []string{"manageTask"}, func(t *testing.T) string { return "/api/case/task/" + newTask(t) },
			func() any { return map[string]any{"status": "InProgress"} }, 200},
		{"create log", "POST", []string{"manageTask"}, func(t *testing.T) string { return "/api/case/task/" + newTask(t) + "/log" },
			func() any { return map[string]any{"message": "m"} }, 201},
		{"update log", "PATCH", []string{"manageTask"}, func(t *testing.T) string { return "/api/case/task/log/" + newLog(t) },
			func() any { return map[string]any{"message": "changed"} }, 200},
		{"delete log", "DELETE", []string{"manageTask"}, func(t *testing.T) string { return "/api/case/task/log/" + newLog(t) }, nil, 204},
		{"create template", "POST", []string{"manageCaseTemplate"}, func(*testing.T) string { return "/api/case/template" },
			func() any { return map[string]any{"name": unique("t")} }, 201},
		{"update template", "PATCH", []string{"manageCaseTemplate"}, func(t *testing.T) string { return "/api/case/template/" + newTemplate(t) },
			func() any { return map[string]any{"titlePrefix": "x"} }, 200},
		{"delete template", "DELETE", []string{"manageCaseTemplate"}, func(t *testing.T) string { return "/api/case/template/" + newTemplate(t) }, nil, 204},
		{"create custom field", "POST", []string{"manageCustomField as a platform administrator"}, func(*testing.T) string { return "/api/customField" },
			func() any { return map[string]any{"name": unique("cf"), "type": "integer"} }, 201},
		{"update custom field", "PATCH", []string{"manageCustomField as a platform administrator"}, func(t *testing.T) string { return "/api/customField/" + newField(t) },
			func() any { return map[string]any{"description": "x"} }, 200},
		{"delete custom field", "DELETE", []string{"manageCustomField as a platform administrator"}, func(t *testing.T) string { return "/api/customField/" + newField(t) }, nil, 204},
		{"create user", "POST", []string{"manageUser"}, func(*testing.T) string { return "/api/user" },
			func() any { return map[string]any{"login": unique("u"), "profile": "analyst", "organisation": "soc"} }, 201},
		{"force delete user", "DELETE", []string{"manageUser"}, func(t *testing.T) string {
			login := unique("fd")
			tm.admin.Call(t, http.MethodPost, "/api/user", map[string]any{"login": login, "profile": "read-only", "organisation": "soc"}).Want(t, 201)
			return "/api/user/" + login + "/force?organisation=soc"
		}, nil, 204},
		{"create organisation", "POST", []string{"manageOrganisation"}, func(*testing.T) string { return "/api/organisation" },
			func() any { return map[string]any{"name": unique("org")} }, 201},
		{"update organisation", "PATCH", []string{"manageOrganisation"}, func(*testing.T) string { return "/api/organisation/soc" },
			func() any { return map[string]any{"description": "x"} }, 200},
		{"create observable", "POST", []string{"manageObservable"}, func(t *testing.T) string { return "/api/case/" + newCase(t) + "/artifact" },
			func() any { return map[string]any{"dataType": "domain", "data": "x.example"} }, 201},
		{"create alert observable", "POST", []string{"manageObservable"}, func(t *testing.T) string { return "/api/alert/" + newAlert(t) + "/artifact" },
			func() any { return map[string]any{"dataType": "domain", "data": "x.example"} }, 201},
		{"update observable", "PATCH", []string{"manageObservable"}, func(t *testing.T) string { return "/api/case/artifact/" + newObservable(t) },
			func() any { return map[string]any{"ioc": true} }, 200},
		{"delete observable", "DELETE", []string{"manageObservable"}, func(t *testing.T) string { return "/api/case/artifact/" + newObservable(t) }, nil, 204},
		{"create alert", "POST", []string{"manageAlert"}, func(*testing.T) string { return "/api/alert" },
			func() any {
				return map[string]any{"type": "t", "source": "s", "sourceRef": unique("r"), "title": "t", "description": "d"}
			}, 201},
		{"update alert", "PATCH", []string{"manageAlert"}, func(t *testing.T) string { return "/api/alert/" + newAlert(t) },
			func() any { return map[string]any{"description": "x"} }, 200},
		{"delete alert", "DELETE", []string{"manageAlert"}, func(t *testing.T) string { return "/api/alert/" + newAlert(t) }, nil, 204},
		{"mark alert read", "POST", []string{"manageAlert"}, func(t *testing.T) string { return "/api/alert/" + newAlert(t) + "/markAsRead" }, nil, 200},
		{"mark alert unread", "POST", []string{"manageAlert"}, func(t *testing.T) string { return "/api/alert/" + newAlert(t) + "/markAsUnead" }, nil, 200},
		{"follow alert", "POST", []string{"manageAlert"}, func(t *testing.T) string { return "/api/alert/" + newAlert(t) + "/follow" }, nil, 200},
		{"case from alert", "POST", []string{"manageAlert", "manageCase"}, func(t *testing.T) string { return "/api/alert/" + newAlert(t) + "/createCase" }, nil, 201},
		{"merge alert", "POST", []string{"manageAlert", "manageCase"}, func(t *testing.T) string {
			return "/api/alert/" + newAlert(t) + "/merge/" + newCase(t)
		}, nil, 200},
	}
	for _, rt := range routes {
		for profile, c := range profiles {
			t.Run(rt.name+"/"+profile, func(t *testing.T) {
				var body any
				if rt.body != nil {
					body = rt.body()
				}
				r := c.Call(t, rt.method, rt.path(t), body)
				missing := ""
				for _, p := range rt.perms {
					if missing == "" && !slices.Contains(holders[p], profile) {
						missing = p
					}
				}
				if missing == "" {
					r.Want(t, rt.ok)
					return
				}
				if msg := r.WantError(t, 403, "AuthorizationError"); !strings.Contains(msg, missing) {
					t.Errorf("message %q does not name %s", msg, missing)
				}
			})
		}
	}

	// Reads need no permission but membership: every profile of soc reads soc's records, the administrator
	// (in admin) and cert's analyst do not find them.
	caseID := newCase(t)
	taskID := newTask(t)
	tplID := newTemplate(t)
	obsID := newObservable(t)
	alertID := newAlert(t)
	for _, path := range []string{"/api/case/" + caseID, "/api/case/task/" + taskID, "/api/case/template/" + tplID,
		"/api/case/" + caseID + "/task", "/api/case/artifact/" + obsID, "/api/alert/" + alertID,
		"/api/alert/" + alertID + "/artifact", "/api/case/" + caseID + "/artifact"} {
		for _, c := range []*client{tm.orgAdmin, tm.analyst, tm.readOnly} {
			c.Call(t, http.MethodGet, path, nil).Want(t, 200)
		}
		for _, c := range []*client{tm.admin, tm.other} {
			c.Call(t, http.MethodGet, path, nil).WantError(t, 404, "NotFoundError")
		}
		tm.anon().Call(t, http.MethodGet, path, nil).WantError(t, 401, "AuthenticationError")
	}
}
