package cases

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Alert statuses, derived from read and case (DECISIONS.md "case-svc").
const (
	AlertNew      = "New"
	AlertUpdated  = "Updated"
	AlertIgnored  = "Ignored"
	AlertImported = "Imported"
)

// AlertStatus derives an alert's status: unread+no case = New, unread+case = Updated, read+no case =
// Ignored, read+case = Imported.
func AlertStatus(read bool, caseID string) string {
	switch {
	case !read && caseID == "":
		return AlertNew
	case !read:
		return AlertUpdated
	case caseID == "":
		return AlertIgnored
	}
	return AlertImported
}

// Alert is a notification from an external source, in one organisation, unique there by (Type, Source,
// SourceRef): its id is derived from those, so a duplicate insert fails on the _id alone.
type Alert struct {
	ID           string
	Org          string
	Type         string
	Source       string
	SourceRef    string
	ExternalLink string
	CaseID       string // the case it was imported into or merged with, "" if none
	Title        string
	Description  string
	Severity     int
	TLP          int
	PAP          int
	Date         time.Time
	LastSyncDate time.Time
	Tags         []string
	Read         bool
	Follow       bool
	CustomFields customfield.Values
	Template     string   // name of the case template a case from it uses, "" if none
	Observables  []string // ids of its observables
	record.Meta
}

// Status is the alert's derived status.
func (a Alert) Status() string { return AlertStatus(a.Read, a.CaseID) }

// AlertState is the part of an alert its status derives from.
type AlertState struct {
	Case string
	Read bool
}

// AlertID returns the id of the alert of an organisation with this (type, source, sourceRef).
func AlertID(org, typ, source, sourceRef string) string {
	sum := sha256.Sum256([]byte(org + "\x00" + typ + "\x00" + source + "\x00" + sourceRef))
	return "~" + hex.EncodeToString(sum[:16])
}

// NewAlert is an alert as a client creates it.
type NewAlert struct {
	Type         string
	Source       string
	SourceRef    string
	ExternalLink string
	Title        string
	Description  string
	Severity     *int
	TLP          *int
	PAP          *int
	Date         *time.Time
	Tags         []string
	Follow       *bool
	CustomFields map[string]customfield.Input
	Template     string
	Artifacts    []NewObservable
}

// AlertUpdate holds the changes to an alert. Type, source and sourceRef identify it and never change: they
// are accepted only with the alert's current values.
type AlertUpdate struct {
	Type         record.Change[string]
	Source       record.Change[string]
	SourceRef    record.Change[string]
	Title        record.Change[string]
	Description  record.Change[string]
	Severity     record.Change[int]
	TLP          record.Change[int]
	PAP          record.Change[int]
	Date         record.Change[time.Time]
	LastSyncDate record.Change[time.Time]
	Tags         record.Change[[]string]
	Follow       record.Change[bool]
	ExternalLink record.Change[string]
	Template     record.Change[string]
	CustomFields record.Change[map[string]customfield.Input]
}

// AlertStore persists alerts.
type AlertStore interface {
	// CreateAlert fails with ErrAlertExists when the id (the organisation's type, source and sourceRef) is
	// taken.
	CreateAlert(ctx context.Context, a Alert) error
	// Alert fails with ErrAlertNotFound.
	Alert(ctx context.Context, id string) (Alert, error)
	Alerts(ctx context.Context, f search.Node, p search.Page) ([]Alert, int64, error)
	// UpdateAlert writes the named fields (AlertUpdate's names: title, tags…) of a.
	UpdateAlert(ctx context.Context, a Alert, fields []string, by string, at time.Time) (Alert, error)
	// SetAlertState sets case, read and the derived status at once, if the alert's case is still expectCase
	// (and its read flag expectRead, when given): it reports false, changing nothing, otherwise.
	SetAlertState(ctx context.Context, id, expectCase string, expectRead *bool, to AlertState, by string, at time.Time) (Alert, bool, error)
	AddAlertObservables(ctx context.Context, id string, observableIDs []string) error
	RemoveAlertObservable(ctx context.Context, id, observableID string) error
	DeleteAlert(ctx context.Context, id string) error
}

// Errors of alerts.
var (
	ErrAlertNotFound       = apperr.New(apperr.NotFound, "Alert not found")
	ErrAlertExists         = apperr.New(apperr.Conflict, "the alert already exists")
	ErrAlertImported       = apperr.New(apperr.BadRequest, "Alert is already imported")
	errAlertStateContended = errors.New("alert state keeps changing")
)

// AlertFields is the allow-list of alert searches.
var AlertFields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "type": {Path: "type"}, "source": {Path: "source"},
	"sourceRef": {Path: "sourceRef"}, "externalLink": {Path: "externalLink"}, "case": {Path: PathCaseID},
	"title": {Path: "title"}, "description": {Path: "description"}, "severity": {Path: "severity", Type: search.Number},
	"date": {Path: "date", Type: search.Number}, "lastSyncDate": {Path: "lastSyncDate", Type: search.Number},
	"tags": {Path: "tags"}, "tlp": {Path: "tlp", Type: search.Number}, "pap": {Path: "pap", Type: search.Number},
	"status": {Path: "status"}, "read": {Path: "read", Type: search.Bool}, "follow": {Path: "follow", Type: search.Bool},
	"caseTemplate": {Path: "caseTemplate"},
	"createdAt":    {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
	"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
	"_createdAt": {Path: "createdAt", Type: search.Number}, "_createdBy": {Path: "createdBy"},
	"_updatedAt": {Path: "updatedAt", Type: search.Number}, "_updatedBy": {Path: "updatedBy"},
}

// CreateAlert creates an alert in the caller's organisation (manageAlert) with its artifacts as
// observables; artifacts repeating a value are dropped, as in the reference system.
func (s *Service) CreateAlert(ctx context.Context, c identity.Caller, n NewAlert) (Alert, []Observable, error) {
	if err := c.Require(identity.ManageAlert); err != nil {
		return Alert{}, nil, err
	}
	now := s.clock()
	var p record.Problems
	p.Text("type", n.Type, true, record.MaxShort)
	p.Text("source", n.Source, true, record.MaxShort)
	p.Text("sourceRef", n.SourceRef, true, record.MaxShort)
	p.Text("title", n.Title, true, record.MaxTitle)
	p.Text("description", n.Description, true, record.MaxDescription)
	p.Text("externalLink", n.ExternalLink, false, record.MaxDescription)
	a := Alert{Org: c.Org, Type: n.Type, Source: n.Source, SourceRef: n.SourceRef, ExternalLink: n.ExternalLink,
		Title: n.Title, Description: n.Description, Severity: DefaultSeverity, TLP: DefaultTLP, PAP: DefaultPAP,
		Date: now, LastSyncDate: now, Follow: true, Meta: record.Meta{CreatedAt: now, CreatedBy: c.Login}}
	for _, l := range []struct {
		name   string
		in     *int
		dst    *int
		lo, hi int
	}{{"severity", n.Severity, &a.Severity, 1, 4}, {"tlp", n.TLP, &a.TLP, 0, 3}, {"pap", n.PAP, &a.PAP, 0, 3}} {
		if l.in != nil {
			p.Level(l.name, *l.in, l.lo, l.hi)
			*l.dst = *l.in
		}
	}
	if n.Date != nil {
		a.Date = record.Millis(*n.Date)
	}
	if n.Follow != nil {
		a.Follow = *n.Follow
	}
	a.Tags = record.CleanTags(&p, "tags", n.Tags)
	defs, err := s.fields.AllCustomFields(ctx)
	if err != nil {
		return Alert{}, nil, err
	}
	a.CustomFields = customfield.ParseValues(&p, defs, n.CustomFields)
	customfield.NumberOrders(a.CustomFields)
	a.ID = AlertID(c.Org, n.Type, n.Source, n.SourceRef)
	parent := Parent{Alert: a.ID}
	var items []pending
	seen := map[string]bool{}
	if len(n.Artifacts) > maxBatchValues { // before any work, as for an observable batch
		return Alert{}, nil, record.FieldError("artifacts", fmt.Sprintf("at most %d artifacts", maxBatchValues))
	}
	for i, art := range n.Artifacts {
		prefix := fmt.Sprintf("artifacts[%d]", i)
		base := checkNewObservable(&p, prefix, art, now)
		if art.File != nil {
			p.Add(prefix, "files of an alert's artifacts are written \"name;contentType;base64\" in data")
		}
		for _, it := range s.dataValues(&p, prefix, base, art.Data) {
			id := observableID(parent, it.o.DataType, it.o.Key)
			if !seen[id] {
				seen[id] = true
				items = append(items, it)
				a.Observables = append(a.Observables, id)
			}
		}
	}
	if err := p.Err(); err != nil {
		return Alert{}, nil, err
	}
	if n.Template != "" {
		t, err := s.template(ctx, c, n.Template)
		if apperr404(err) {
			return Alert{}, nil, record.FieldError("caseTemplate", "no such case template in the organisation")
		}
		if err != nil {
			return Alert{}, nil, err
		}
		a.Template = t.Name
	}
	// The alert first: a duplicate fails before anything else is written. Its list of observables is known
	// beforehand (their ids derive from the alert and the values), and a listed observable that a failure
	// kept from being written is simply not shown.
	if err := s.alerts.CreateAlert(ctx, a); err != nil {
		if errors.Is(err, ErrAlertExists) {
			return Alert{}, nil, apperr.Errorf(apperr.Conflict, "Alert %s:%s:%s already exists in organisation %s",
				shortName(a.Type), shortName(a.Source), shortName(a.SourceRef), c.Org)
		}
		return Alert{}, nil, err
	}
	created, _, err := s.insertObservables(ctx, c, parent, items, now, false)
	if err != nil {
		return Alert{}, nil, err
	}
	return a, created, nil
}

// Alert returns an alert of the caller's organisation by id, or by the reference system's name
// "type;source;sourceRef".
func (s *Service) Alert(ctx context.Context, c identity.Caller, idOrName string) (Alert, error) {
	id := idOrName
	if !strings.HasPrefix(id, "~") {
		parts := strings.SplitN(id, ";", 3)
		if len(parts) != 3 {
			return Alert{}, ErrAlertNotFound
		}
		id = AlertID(c.Org, parts[0], parts[1], parts[2])
	}
	a, err := s.alerts.Alert(ctx, id)
	if err != nil {
		return Alert{}, err
	}
	if a.Org != c.Org {
		return Alert{}, ErrAlertNotFound
	}
	return a, nil
}

// AlertObservables returns the observables of an alert, found by id.
func (s *Service) AlertObservables(ctx context.Context, a Alert) ([]Observable, error) {
	out := make([]Observable, 0, len(a.Observables))
	for _, id := range a.Observables {
		o, err := s.observables.Observable(ctx, id)
		if errors.Is(err, ErrObservableNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// Alerts lists and searches the alerts of the caller's organisation.
func (s *Service) Alerts(ctx context.Context, c identity.Caller, f search.Node, p search.Page) ([]Alert, int64, error) {
	return s.alerts.Alerts(ctx, record.And(f, record.InOrg(c.Org)), p)
}

// UpdateAlert changes an alert (manageAlert).
func (s *Service) UpdateAlert(ctx context.Context, c identity.Caller, id string, u AlertUpdate) (Alert, error) {
	if err := c.Require(identity.ManageAlert); err != nil {
		return Alert{}, err
	}
	a, err := s.Alert(ctx, c, id)
	if err != nil {
		return Alert{}, err
	}
	var p record.Problems
	var fields []string
	for _, f := range []struct {
		name string
		ch   record.Change[string]
		cur  string
	}{{"type", u.Type, a.Type}, {"source", u.Source, a.Source}, {"sourceRef", u.SourceRef, a.SourceRef}} {
		if f.ch.Set && f.ch.V != f.cur {
			p.Add(f.name, "cannot be changed")
		}
	}
	p.ChangeText(&fields, "title", u.Title, &a.Title, true, record.MaxTitle)
	p.ChangeText(&fields, "description", u.Description, &a.Description, true, record.MaxDescription)
	p.ChangeText(&fields, "externalLink", u.ExternalLink, &a.ExternalLink, false, record.MaxDescription)
	p.ChangeLevel(&fields, "severity", u.Severity, &a.Severity, 1, 4)
	p.ChangeLevel(&fields, "tlp", u.TLP, &a.TLP, 0, 3)
	p.ChangeLevel(&fields, "pap", u.PAP, &a.PAP, 0, 3)
	date := func(name string, ch record.Change[time.Time], dst *time.Time) {
		if !ch.Set {
			return
		}
		if ch.Null {
			p.Add(name, "required")
			return
		}
		*dst = record.Millis(ch.V)
		fields = append(fields, name)
	}
	date("date", u.Date, &a.Date)
	date("lastSyncDate", u.LastSyncDate, &a.LastSyncDate)
	if u.Tags.Set {
		a.Tags = record.CleanTags(&p, "tags", u.Tags.V)
		fields = append(fields, "tags")
	}
	p.ChangeFlag(&fields, "follow", u.Follow, &a.Follow)
	if u.CustomFields.Set {
		defs, err := s.fields.AllCustomFields(ctx)
		if err != nil {
			return Alert{}, err
		}
		vals := customfield.ParseValues(&p, defs, u.CustomFields.V)
		for name, v := range vals {
			if old, ok := a.CustomFields[name]; ok && v.Order < 0 {
				v.Order = old.Order
				vals[name] = v
			}
		}
		customfield.NumberOrders(vals)
		a.CustomFields = vals
		fields = append(fields, "customFields")
	}
	if err := p.Err(); err != nil {
		return Alert{}, err
	}
	if u.Template.Set {
		a.Template = ""
		if !u.Template.Null && u.Template.V != "" {
			t, err := s.template(ctx, c, u.Template.V)
			if apperr404(err) {
				return Alert{}, record.FieldError("caseTemplate", "no such case template in the organisation")
			}
			if err != nil {
				return Alert{}, err
			}
			a.Template = t.Name
		}
		fields = append(fields, "caseTemplate")
	}
	if len(fields) == 0 {
		return a, nil
	}
	return s.alerts.UpdateAlert(ctx, a, fields, c.Login, s.clock())
}

// DeleteAlert removes an alert and its observables (manageAlert); a case made from it stays.
func (s *Service) DeleteAlert(ctx context.Context, c identity.Caller, id string) error {
	if err := c.Require(identity.ManageAlert); err != nil {
		return err
	}
	a, err := s.Alert(ctx, c, id)
	if err != nil {
		return err
	}
	if err := s.observables.DeleteParentObservables(ctx, Parent{Alert: a.ID}); err != nil {
		return err
	}
	return s.alerts.DeleteAlert(ctx, a.ID)
}

// MarkAsRead sets whether an alert was read (manageAlert) and returns it; its status follows. The change is
// conditional on the alert's case, so a concurrent import never leaves a status that contradicts read and
// case.
func (s *Service) MarkAsRead(ctx context.Context, c identity.Caller, id string, read bool) (Alert, error) {
	if err := c.Require(identity.ManageAlert); err != nil {
		return Alert{}, err
	}
	for range 100 {
		a, err := s.Alert(ctx, c, id)
		if err != nil {
			return Alert{}, err
		}
		out, ok, err := s.alerts.SetAlertState(ctx, a.ID, a.CaseID, nil, AlertState{Case: a.CaseID, Read: read}, c.Login, s.clock())
		if err != nil || ok {
			return out, err
		}
	}
	return Alert{}, errAlertStateContended
}

// Follow sets whether an alert is followed (manageAlert).
func (s *Service) Follow(ctx context.Context, c identity.Caller, id string, follow bool) (Alert, error) {
	return s.UpdateAlert(ctx, c, id, AlertUpdate{Follow: record.Change[bool]{Set: true, V: follow}})
}

// CreateCaseFromAlert makes a case of an alert (manageAlert and manageCase): the alert's title,
// description, severity, tlp, pap, tags and custom fields, the template given (else the alert's), and copies
// of its observables. The alert then belongs to the case and is read (Imported). An alert that already has a
// case returns that case, with created false.
func (s *Service) CreateCaseFromAlert(ctx context.Context, c identity.Caller, id, template string) (cs Case, created bool, err error) {
	if err := c.Require(identity.ManageAlert); err != nil {
		return Case{}, false, err
	}
	if err := c.Require(identity.ManageCase); err != nil {
		return Case{}, false, err
	}
	a, err := s.Alert(ctx, c, id)
	if err != nil {
		return Case{}, false, err
	}
	if a.CaseID != "" {
		cs, err := s.Case(ctx, c, a.CaseID)
		return cs, false, err
	}
	if template == "" {
		template = a.Template
	}
	defs, err := s.fields.AllCustomFields(ctx)
	if err != nil {
		return Case{}, false, err
	}
	cfs := map[string]customfield.Input{}
	for name, v := range a.CustomFields {
		if _, defined := defs[name]; defined { // a definition deleted since is dropped
			order := v.Order
			cfs[name] = customfield.Input{Type: string(v.Type), Value: v.Value, Order: &order}
		}
	}
	n := NewCase{Title: a.Title, Description: a.Description, Severity: &a.Severity, TLP: &a.TLP, PAP: &a.PAP,
		Tags: a.Tags, CustomFields: cfs, Template: template}
	cs, _, err = s.createCase(ctx, c, n, true)
	if err != nil {
		return Case{}, false, err
	}
	undo := func() { _ = s.removeCase(context.WithoutCancel(ctx), cs.ID) }
	obs, err := s.AlertObservables(ctx, a)
	if err == nil {
		err = s.copyObservables(ctx, c, cs.ID, obs)
	}
	if err != nil {
		undo()
		return Case{}, false, err
	}
	_, ok, err := s.alerts.SetAlertState(ctx, a.ID, "", nil, AlertState{Case: cs.ID, Read: true}, c.Login, s.clock())
	if err != nil {
		undo()
		return Case{}, false, err
	}
	if !ok { // another request imported the alert meanwhile: its case wins
		undo()
		a, err = s.Alert(ctx, c, id)
		if err != nil {
			return Case{}, false, err
		}
		if a.CaseID == "" {
			return Case{}, false, errAlertStateContended
		}
		cs, err := s.Case(ctx, c, a.CaseID)
		return cs, false, err
	}
	return cs, true, nil
}

// MergeAlert merges an alert into a case (manageAlert and manageCase): the case gets copies of its
// observables (a value the case has gains the copy's tags), its tags, the custom fields it lacks, and its
// description appended as the reference system does; the alert belongs to the case and is read. An alert
// that already has a case is refused.
func (s *Service) MergeAlert(ctx context.Context, c identity.Caller, alertID, caseID string) (Case, error) {
	if err := c.Require(identity.ManageAlert); err != nil {
		return Case{}, err
	}
	if err := c.Require(identity.ManageCase); err != nil {
		return Case{}, err
	}
	a, err := s.Alert(ctx, c, alertID)
	if err != nil {
		return Case{}, err
	}
	if a.CaseID != "" {
		return Case{}, ErrAlertImported
	}
	cs, err := s.Case(ctx, c, caseID)
	if err != nil {
		return Case{}, err
	}
	// Claim the alert first: two merges of one alert never both apply.
	_, ok, err := s.alerts.SetAlertState(ctx, a.ID, "", nil, AlertState{Case: cs.ID, Read: true}, c.Login, s.clock())
	if err != nil {
		return Case{}, err
	}
	if !ok {
		return Case{}, ErrAlertImported
	}
	out, err := s.mergeInto(ctx, c, a, cs)
	if err != nil {
		// Give the alert back so the merge can be repeated (copied observables are not copied twice).
		_, _, _ = s.alerts.SetAlertState(context.WithoutCancel(ctx), a.ID, cs.ID, nil,
			AlertState{Case: "", Read: a.Read}, c.Login, s.clock())
		return Case{}, err
	}
	return out, nil
}

// MergeAlerts merges alerts into a case one after the other (MergeAlert); it stops at the first refusal,
// keeping the merges made, and returns the case.
func (s *Service) MergeAlerts(ctx context.Context, c identity.Caller, caseID string, alertIDs []string) (Case, error) {
	if err := c.Require(identity.ManageAlert); err != nil {
		return Case{}, err
	}
	if err := c.Require(identity.ManageCase); err != nil {
		return Case{}, err
	}
	cs, err := s.Case(ctx, c, caseID)
	if err != nil {
		return Case{}, err
	}
	for _, id := range alertIDs {
		if cs, err = s.MergeAlert(ctx, c, id, cs.ID); err != nil {
			return Case{}, err
		}
	}
	return cs, nil
}

func (s *Service) mergeInto(ctx context.Context, c identity.Caller, a Alert, cs Case) (Case, error) {
	obs, err := s.AlertObservables(ctx, a)
	if err != nil {
		return Case{}, err
	}
	if err := s.copyObservables(ctx, c, cs.ID, obs); err != nil {
		return Case{}, err
	}
	cs.Description += "\n  \n#### Merged with alert #" + a.SourceRef + " " + a.Title + "\n\n" + a.Description
	if len(cs.Description) > record.MaxDescription {
		cs.Description = cs.Description[:record.MaxDescription]
	}
	cs.Tags = record.UnionTags(cs.Tags, a.Tags)
	if cs.CustomFields == nil {
		cs.CustomFields = customfield.Values{}
	}
	for name, v := range a.CustomFields {
		if _, has := cs.CustomFields[name]; !has {
			v.Order = -1
			cs.CustomFields[name] = v
		}
	}
	customfield.NumberOrders(cs.CustomFields)
	return s.cases.UpdateCase(ctx, cs, []string{"description", "tags", "customFields"}, c.Login, s.clock())
}

// CaseAlerts returns the alerts imported into or merged with a case.
func (s *Service) CaseAlerts(ctx context.Context, c identity.Caller, caseID string) ([]Alert, error) {
	as, _, err := s.alerts.Alerts(ctx, record.And(record.InOrg(c.Org), search.Node{Op: search.OpEq, Path: PathCaseID, Value: caseID}),
		search.Page{})
	return as, err
}

// unlinkAlerts detaches the alerts of a deleted case: they become New or Ignored again.
func (s *Service) unlinkAlerts(ctx context.Context, org, caseID, by string) error {
	as, _, err := s.alerts.Alerts(ctx, record.And(search.Node{Op: search.OpEq, Path: record.PathOrg, Value: org},
		search.Node{Op: search.OpEq, Path: PathCaseID, Value: caseID}), search.Page{})
	if err != nil {
		return err
	}
	for _, a := range as {
		for i := 0; ; i++ {
			read := a.Read
			_, ok, err := s.alerts.SetAlertState(ctx, a.ID, caseID, &read, AlertState{Case: "", Read: read}, by, s.clock())
			if err != nil {
				return err
			}
			if ok || i == 100 {
				break
			}
			if a, err = s.alerts.Alert(ctx, a.ID); err != nil || a.CaseID != caseID {
				break
			}
		}
	}
	return nil
}

// SimilarCase is a case sharing observables with an alert, with the counts of the contract's similar-case
// result.
type SimilarCase struct {
	Case               Case
	SimilarObservables int
	SimilarIOCs        int
	Observables        int
	IOCs               int
	ObservableTypes    map[string]int
}

// SimilarMax bounds the work of one similarity computation (SimilarCases): the case observables of the
// organisation sharing a value with the alert, counted on the index first. Beyond it the computation is
// refused (ErrTooSimilar) rather than truncated: partial counts would look like exact ones.
const SimilarMax = 10000

// ErrTooSimilar refuses a similarity computation over SimilarMax observables.
var ErrTooSimilar = apperr.Errorf(apperr.BadRequest,
	"the alert's observables occur in more than %d observables of cases: similar cases are not computed (mark its most common values ignoreSimilarity)", SimilarMax)

// SimilarCases returns the cases of the caller's organisation (other than the alert's own) holding
// observables with the same data as the alert's — of any type; files compare by content — matching
// caseFilter, newest case first. Observables marked ignoreSimilarity count on neither side.
func (s *Service) SimilarCases(ctx context.Context, c identity.Caller, a Alert, caseFilter search.Node) ([]SimilarCase, error) {
	obs, err := s.AlertObservables(ctx, a)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, o := range obs {
		if !o.IgnoreSimilarity && !slices.Contains(keys, o.Key) {
			keys = append(keys, o.Key)
		}
	}
	if len(keys) == 0 {
		return []SimilarCase{}, nil
	}
	// Bounded work (issue 15): counted on the similarity index before any observable is read.
	if n, err := s.observables.CountSimilar(ctx, c.Org, keys, ""); err != nil {
		return nil, err
	} else if n > SimilarMax {
		return nil, ErrTooSimilar
	}
	similar, err := s.observables.SimilarObservables(ctx, c.Org, keys, 0)
	if err != nil {
		return nil, err
	}
	byCase := map[string]*SimilarCase{}
	var ids []any
	for _, o := range similar {
		if o.CaseID == "" || o.CaseID == a.CaseID {
			continue
		}
		sc := byCase[o.CaseID]
		if sc == nil {
			sc = &SimilarCase{ObservableTypes: map[string]int{}}
			byCase[o.CaseID] = sc
			ids = append(ids, o.CaseID)
		}
		sc.SimilarObservables++
		if o.IOC {
			sc.SimilarIOCs++
		}
		sc.ObservableTypes[o.DataType]++
	}
	if len(ids) == 0 {
		return []SimilarCase{}, nil
	}
	f := record.And(caseFilter, search.Node{Op: search.OpIn, Path: "_id", Values: ids})
	css, _, err := s.Cases(ctx, c, f, search.Page{Limit: len(ids)})
	if err != nil {
		return nil, err
	}
	caseIDs := make([]string, len(css))
	for i, cs := range css {
		caseIDs[i] = cs.ID
	}
	counts, err := s.observables.CaseObservableCounts(ctx, caseIDs)
	if err != nil {
		return nil, err
	}
	out := make([]SimilarCase, 0, len(css))
	for _, cs := range css {
		sc := *byCase[cs.ID]
		sc.Case = cs
		sc.Observables, sc.IOCs = counts[cs.ID].Observables, counts[cs.ID].IOCs
		out = append(out, sc)
	}
	slices.SortStableFunc(out, func(x, y SimilarCase) int {
		if d := y.Case.CreatedAt.Compare(x.Case.CreatedAt); d != 0 {
			return d
		}
		return y.SimilarObservables - x.SimilarObservables
	})
	return out, nil
}
