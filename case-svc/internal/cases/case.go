package cases

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/search"
)

// Case statuses (DECISIONS.md "case-svc").
const (
	CaseOpen       = "Open"
	CaseResolved   = "Resolved"
	CaseDuplicated = "Duplicated"
)

// CaseStatuses lists the case statuses.
func CaseStatuses() []string { return []string{CaseOpen, CaseResolved, CaseDuplicated} }

// ResolutionStatuses lists the values of a case's resolutionStatus (the reference system's).
func ResolutionStatuses() []string {
	return []string{"Indeterminate", "FalsePositive", "TruePositive", "Other", "Duplicated"}
}

// ImpactStatuses lists the values of a case's impactStatus (the reference system's).
func ImpactStatuses() []string { return []string{"NoImpact", "WithImpact", "NotApplicable"} }

// Defaults of a new case (DECISIONS.md "case-svc").
const (
	DefaultSeverity = 2
	DefaultTLP      = 2
	DefaultPAP      = 2
)

// Case is a security case of one organisation. Its id is "~" followed by its number, so a case is found by
// _id whether a client names it by id or by number. Zero times and empty strings of the nullable fields
// (endDate, impactStatus, resolutionStatus, summary) are null.
type Case struct {
	ID               string
	Org              string
	Number           int64
	Title            string
	Description      string
	Severity         int
	TLP              int
	PAP              int
	StartDate        time.Time
	EndDate          time.Time
	ImpactStatus     string
	ResolutionStatus string
	Summary          string
	Tags             []string
	Flag             bool
	Status           string
	Owner            string
	CustomFields     customfield.Values
	Template         string // name of the template the case was created from, "" if none
	record.Meta
}

// CaseID returns the id of the case with this value of the id sequence (CaseStore.NextCaseNumber).
func CaseID(number int64) string { return "~" + strconv.FormatInt(number, 10) }

// NewCase is a case as a client creates it.
type NewCase struct {
	Title        string
	Description  string
	Severity     *int
	TLP          *int
	PAP          *int
	StartDate    *time.Time
	Tags         []string
	Flag         *bool
	Owner        string
	Summary      string
	Tasks        []task.Input
	CustomFields map[string]customfield.Input
	Template     string // name or id of a template of the organisation
}

// CaseUpdate holds the changes to a case. Setting status to Resolved or Duplicated closes it.
type CaseUpdate struct {
	Title            record.Change[string]
	Description      record.Change[string]
	Severity         record.Change[int]
	TLP              record.Change[int]
	PAP              record.Change[int]
	StartDate        record.Change[time.Time]
	EndDate          record.Change[time.Time]
	ImpactStatus     record.Change[string]
	ResolutionStatus record.Change[string]
	Summary          record.Change[string]
	Tags             record.Change[[]string]
	Flag             record.Change[bool]
	Status           record.Change[string]
	Owner            record.Change[string]
	CustomFields     record.Change[map[string]customfield.Input]
}

// CaseStore persists cases and their number sequence.
type CaseStore interface {
	// NextCaseNumber returns a new case's value of the id sequence shared by all organisations (its id is
	// CaseID(seq)) and its number in org's own sequence.
	NextCaseNumber(ctx context.Context, org string) (seq, number int64, err error)
	// CaseByNumber returns org's case with that number; it fails with ErrCaseNotFound.
	CaseByNumber(ctx context.Context, org string, number int64) (Case, error)
	CreateCase(ctx context.Context, c Case) error
	// Case fails with ErrCaseNotFound.
	Case(ctx context.Context, id string) (Case, error)
	Cases(ctx context.Context, f search.Node, p search.Page) ([]Case, int64, error)
	// UpdateCase writes the named fields (CaseUpdate's names: title, status, endDate…) of c.
	UpdateCase(ctx context.Context, c Case, fields []string, by string, at time.Time) (Case, error)
	// DeleteCase fails with ErrCaseNotFound when the case is not there: of two deletions of a case (two
	// merges of it), one fails.
	DeleteCase(ctx context.Context, id string) error
}

// CaseFields is the allow-list of case searches and sorts.
var CaseFields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "caseId": {Path: "caseId", Type: search.Number},
	"number": {Path: "caseId", Type: search.Number}, "title": {Path: "title"}, "description": {Path: "description"},
	"severity": {Path: "severity", Type: search.Number}, "tlp": {Path: "tlp", Type: search.Number},
	"pap": {Path: "pap", Type: search.Number}, "startDate": {Path: "startDate", Type: search.Number},
	"endDate": {Path: "endDate", Type: search.Number}, "impactStatus": {Path: "impactStatus"},
	"resolutionStatus": {Path: "resolutionStatus"}, "summary": {Path: "summary"}, "tags": {Path: "tags"},
	"flag": {Path: "flag", Type: search.Bool}, "status": {Path: "status"}, "owner": {Path: "owner"},
	"assignee": {Path: "owner"}, "caseTemplate": {Path: "caseTemplate"},
	"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
	"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
	"_createdAt": {Path: "createdAt", Type: search.Number}, "_createdBy": {Path: "createdBy"},
	"_updatedAt": {Path: "updatedAt", Type: search.Number}, "_updatedBy": {Path: "updatedBy"},
}

// Stats are the counts shown with a case (stats).
type Stats struct {
	Tasks       map[string]int64 // by status
	Observables int64
	Alerts      []Alert // imported into or merged with the case
}

// CreateCase creates a case in the caller's organisation (manageCase), optionally from a template and with
// tasks. Custom fields the template does not bring need manageCustomField, except mandatory ones.
func (s *Service) CreateCase(ctx context.Context, c identity.Caller, n NewCase) (Case, []task.Task, error) {
	return s.createCase(ctx, c, n, false)
}

// createCase is CreateCase; trustedFields skips the manageCustomField check, for custom fields that come
// from an alert rather than from the caller.
func (s *Service) createCase(ctx context.Context, c identity.Caller, n NewCase, trustedFields bool) (Case, []task.Task, error) {
	if err := c.Require(identity.ManageCase); err != nil {
		return Case{}, nil, err
	}
	var tmpl template.Template
	if n.Template != "" {
		t, err := s.template(ctx, c, n.Template)
		if apperr404(err) {
			return Case{}, nil, record.FieldError("template", "no such case template in the organisation")
		}
		if err != nil {
			return Case{}, nil, err
		}
		tmpl = t
	}
	defs, err := s.fields.AllCustomFields(ctx)
	if err != nil {
		return Case{}, nil, err
	}
	for name := range n.CustomFields {
		if _, fromTemplate := tmpl.CustomFields[name]; fromTemplate || defs[name].Mandatory || trustedFields {
			continue
		}
		if err := c.Require(identity.ManageCustomField); err != nil {
			return Case{}, nil, err
		}
	}

	now := s.clock()
	cs := Case{Org: c.Org, Title: n.Title, Description: n.Description, Severity: DefaultSeverity, TLP: DefaultTLP,
		PAP: DefaultPAP, StartDate: now, Flag: false, Status: CaseOpen, Owner: c.Login, Summary: n.Summary,
		Template: tmpl.Name, Meta: record.Meta{CreatedAt: now, CreatedBy: c.Login}}
	var p record.Problems
	p.Text("title", n.Title, true, record.MaxTitle)
	if tmpl.ID != "" {
		if tmpl.TitlePrefix != "" {
			cs.Title = trimRight(tmpl.TitlePrefix) + " " + n.Title
		}
		if n.Description == "" {
			cs.Description = tmpl.Description
		}
		if n.Summary == "" {
			cs.Summary = tmpl.Summary
		}
		if tmpl.Severity != nil {
			cs.Severity = *tmpl.Severity
		}
		if tmpl.TLP != nil {
			cs.TLP = *tmpl.TLP
		}
		if tmpl.PAP != nil {
			cs.PAP = *tmpl.PAP
		}
		cs.Flag = tmpl.Flag
	}
	p.Text("description", cs.Description, true, record.MaxDescription)
	p.Text("summary", cs.Summary, false, record.MaxDescription)
	for _, l := range []struct {
		name   string
		in     *int
		dst    *int
		lo, hi int
	}{{"severity", n.Severity, &cs.Severity, 1, 4}, {"tlp", n.TLP, &cs.TLP, 0, 3}, {"pap", n.PAP, &cs.PAP, 0, 3}} {
		if l.in != nil {
			p.Level(l.name, *l.in, l.lo, l.hi)
			*l.dst = *l.in
		}
	}
	if n.StartDate != nil {
		cs.StartDate = record.Millis(*n.StartDate)
	}
	if n.Flag != nil {
		cs.Flag = *n.Flag
	}
	cs.Tags = record.UnionTags(record.CleanTags(&p, "tags", n.Tags), tmpl.Tags)
	if n.Owner != "" {
		p.Text("owner", n.Owner, false, record.MaxShort)
		cs.Owner = n.Owner
	}

	cs.CustomFields = customfield.Values{}
	for name, v := range tmpl.CustomFields {
		v.ID = ""
		cs.CustomFields[name] = v
	}
	for name, v := range customfield.ParseValues(&p, defs, n.CustomFields) {
		if old, ok := cs.CustomFields[name]; ok && v.Order < 0 {
			v.Order = old.Order
		}
		cs.CustomFields[name] = v
	}
	customfield.NumberOrders(cs.CustomFields)
	customfield.CheckMandatory(&p, defs, cs.CustomFields)

	var tasks []task.Task
	for _, tt := range tmpl.Tasks {
		tasks = append(tasks, task.Task{Title: tt.Title, Group: tt.Group, Description: tt.Description, Owner: tt.Owner,
			Flag: tt.Flag, Order: tt.Order, Status: task.Waiting})
	}
	for i, nt := range n.Tasks {
		t := task.Check(&p, "tasks", nt)
		if nt.Order == nil {
			t.Order = len(tmpl.Tasks) + i
		}
		tasks = append(tasks, t)
	}
	if err := p.Err(); err != nil {
		return Case{}, nil, err
	}
	if err := s.checkOwner(ctx, "owner", c.Org, cs.Owner); err != nil {
		return Case{}, nil, err
	}
	checked := map[string]bool{}
	for _, t := range tasks {
		if checked[t.Owner] { // each distinct owner is looked up once
			continue
		}
		checked[t.Owner] = true
		if err := s.checkOwner(ctx, "tasks.owner", c.Org, t.Owner); err != nil {
			return Case{}, nil, err
		}
	}

	seq, num, err := s.cases.NextCaseNumber(ctx, c.Org)
	if err != nil {
		return Case{}, nil, err
	}
	cs.Number, cs.ID = num, CaseID(seq)
	for i := range tasks {
		t := &tasks[i]
		t.ID, t.Org, t.CaseID = record.NewID(now), c.Org, cs.ID
		t.Meta = record.Meta{CreatedAt: now, CreatedBy: c.Login}
		var keepStart, keepEnd bool
		if i >= len(tmpl.Tasks) {
			nt := n.Tasks[i-len(tmpl.Tasks)]
			keepStart, keepEnd = nt.StartDate != nil, nt.EndDate != nil
		}
		t.Enter(t.Status, now, c.Login, keepStart, keepEnd)
	}
	if err := s.cases.CreateCase(ctx, cs); err != nil {
		return Case{}, nil, err
	}
	if len(tasks) > 0 {
		if err := s.tasks.CreateTasks(ctx, tasks); err != nil {
			// Nothing half-written: without transactions, undo the case (and any task that made it).
			cctx := context.WithoutCancel(ctx)
			_ = s.tasks.DeleteCaseTasks(cctx, cs.ID)
			_ = s.cases.DeleteCase(cctx, cs.ID)
			return Case{}, nil, fmt.Errorf("create tasks of case %d: %w", num, err)
		}
	}
	return cs, tasks, nil
}

// Case returns a case of the caller's organisation by id ("~42") or number ("42": numbers are per
// organisation, so a number is looked up in the caller's organisation only).
func (s *Service) Case(ctx context.Context, c identity.Caller, idOrNumber string) (Case, error) {
	id := idOrNumber
	if len(id) == 0 || id[0] != '~' {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n <= 0 {
			return Case{}, ErrCaseNotFound
		}
		return s.cases.CaseByNumber(ctx, c.Org, n)
	}
	cs, err := s.cases.Case(ctx, id)
	if err != nil {
		return Case{}, err
	}
	if cs.Org != c.Org {
		return Case{}, ErrCaseNotFound
	}
	return cs, nil
}

// CaseID returns the id of a case of the caller's organisation, found as Case finds it: the case the tasks of
// package task are added to or listed for.
func (s *Service) CaseID(ctx context.Context, c identity.Caller, idOrNumber string) (string, error) {
	cs, err := s.Case(ctx, c, idOrNumber)
	return cs.ID, err
}

// Cases lists and searches the cases of the caller's organisation.
func (s *Service) Cases(ctx context.Context, c identity.Caller, f search.Node, p search.Page) ([]Case, int64, error) {
	return s.cases.Cases(ctx, record.And(f, record.InOrg(c.Org)), p)
}

// UpdateCase changes a case (manageCase). Setting status Resolved or Duplicated closes it: endDate is set
// (unless given) and its Waiting tasks are cancelled, InProgress ones completed. Setting Open again reopens
// it (endDate cleared unless given). customFields, when given, replace the case's: a field the case does not
// have yet needs manageCustomField (unless mandatory), and mandatory fields keep a value.
func (s *Service) UpdateCase(ctx context.Context, c identity.Caller, id string, u CaseUpdate) (Case, error) {
	if err := c.Require(identity.ManageCase); err != nil {
		return Case{}, err
	}
	cs, err := s.Case(ctx, c, id)
	if err != nil {
		return Case{}, err
	}
	prevStatus := cs.Status
	var p record.Problems
	var fields []string
	mark := func(name string) { fields = append(fields, name) }

	p.ChangeText(&fields, "title", u.Title, &cs.Title, true, record.MaxTitle)
	p.ChangeText(&fields, "description", u.Description, &cs.Description, true, record.MaxDescription)
	p.ChangeText(&fields, "summary", u.Summary, &cs.Summary, false, record.MaxDescription)
	p.ChangeText(&fields, "owner", u.Owner, &cs.Owner, false, record.MaxShort)
	enum := func(name string, ch record.Change[string], dst *string, values []string) {
		if !ch.Set {
			return
		}
		if !ch.Null && ch.V != "" && !slices.Contains(values, ch.V) {
			p.Add(name, "one of %v", values)
			return
		}
		*dst = ch.V
		mark(name)
	}
	enum("impactStatus", u.ImpactStatus, &cs.ImpactStatus, ImpactStatuses())
	enum("resolutionStatus", u.ResolutionStatus, &cs.ResolutionStatus, ResolutionStatuses())
	if u.Status.Set {
		if u.Status.Null || !slices.Contains(CaseStatuses(), u.Status.V) {
			p.Add("status", "one of Open, Resolved, Duplicated")
		} else {
			cs.Status = u.Status.V
			mark("status")
		}
	}
	p.ChangeLevel(&fields, "severity", u.Severity, &cs.Severity, 1, 4)
	p.ChangeLevel(&fields, "tlp", u.TLP, &cs.TLP, 0, 3)
	p.ChangeLevel(&fields, "pap", u.PAP, &cs.PAP, 0, 3)
	if u.StartDate.Set {
		if u.StartDate.Null {
			p.Add("startDate", "required")
		}
		cs.StartDate = record.Millis(u.StartDate.V)
		mark("startDate")
	}
	if u.EndDate.Set {
		cs.EndDate = time.Time{}
		if !u.EndDate.Null {
			cs.EndDate = record.Millis(u.EndDate.V)
		}
		mark("endDate")
	}
	if u.Tags.Set {
		cs.Tags = record.CleanTags(&p, "tags", u.Tags.V)
		mark("tags")
	}
	p.ChangeFlag(&fields, "flag", u.Flag, &cs.Flag)
	if u.CustomFields.Set {
		defs, err := s.fields.AllCustomFields(ctx)
		if err != nil {
			return Case{}, err
		}
		for name := range u.CustomFields.V {
			if _, has := cs.CustomFields[name]; has || defs[name].Mandatory {
				continue
			}
			if err := c.Require(identity.ManageCustomField); err != nil {
				return Case{}, err
			}
		}
		vals := customfield.ParseValues(&p, defs, u.CustomFields.V)
		for name, v := range vals {
			if old, ok := cs.CustomFields[name]; ok && v.Order < 0 {
				v.Order = old.Order
				vals[name] = v
			}
		}
		customfield.NumberOrders(vals)
		customfield.CheckMandatory(&p, defs, vals)
		cs.CustomFields = vals
		mark("customFields")
	}

	closing := u.Status.Value() && cs.Status != CaseOpen
	now := s.clock()
	switch {
	case closing && !u.EndDate.Set && (prevStatus == CaseOpen || cs.EndDate.IsZero()):
		cs.EndDate = now
		mark("endDate")
	case u.Status.Value() && cs.Status == CaseOpen && prevStatus != CaseOpen && !u.EndDate.Set:
		cs.EndDate = time.Time{}
		mark("endDate")
	}
	if err := p.Err(); err != nil {
		return Case{}, err
	}
	if u.Owner.Value() && u.Owner.V != "" {
		if err := s.checkOwner(ctx, "owner", c.Org, cs.Owner); err != nil {
			return Case{}, err
		}
	}
	if len(fields) == 0 {
		return cs, nil
	}
	updated, err := s.cases.UpdateCase(ctx, cs, fields, c.Login, now)
	if err != nil {
		return Case{}, err
	}
	if closing {
		// After the case: a failure here leaves tasks open on a closed case, which closing again repairs.
		if err := s.tasks.CloseCaseTasks(ctx, cs.ID, c.Login, now); err != nil {
			return Case{}, err
		}
	}
	return updated, nil
}

// DeleteCase removes a case with its observables, tasks and their logs (manageCase); its alerts lose their
// case (New or Ignored again). Children go first, so an interrupted delete leaves the case visible and
// deletable again.
func (s *Service) DeleteCase(ctx context.Context, c identity.Caller, id string) error {
	if err := c.Require(identity.ManageCase); err != nil {
		return err
	}
	cs, err := s.Case(ctx, c, id)
	if err != nil {
		return err
	}
	if err := s.unlinkAlerts(ctx, c.Org, cs.ID, c.Login); err != nil {
		return err
	}
	return s.removeCase(ctx, cs.ID)
}

// removeCase deletes a case's observables, tasks (with logs), then the case.
func (s *Service) removeCase(ctx context.Context, id string) error {
	if err := s.observables.DeleteParentObservables(ctx, Parent{Case: id}); err != nil {
		return err
	}
	if err := s.tasks.DeleteCaseTasks(ctx, id); err != nil {
		return err
	}
	return s.cases.DeleteCase(ctx, id)
}

// Stats computes the counts shown with a case: tasks by status, observables, and the alerts it came from.
func (s *Service) Stats(ctx context.Context, c identity.Caller, cs Case) (Stats, error) {
	counts, err := s.tasks.CountTasks(ctx, cs.ID)
	if err != nil {
		return Stats{}, err
	}
	n, err := s.observables.CountCaseObservables(ctx, cs.ID)
	if err != nil {
		return Stats{}, err
	}
	as, err := s.CaseAlerts(ctx, c, cs.ID)
	if err != nil {
		return Stats{}, err
	}
	return Stats{Tasks: counts, Observables: n, Alerts: as}, nil
}

// Permissions returns what the caller may do on a case: the permissions of its profile, since a case is
// owned by the caller's organisation.
func (s *Service) Permissions(c identity.Caller, _ Case) []identity.Permission {
	return slices.Clone(c.Permissions)
}
