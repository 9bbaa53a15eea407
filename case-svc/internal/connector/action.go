package connector

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Action is a responder run on a case-svc object through an analysis server.
type Action struct {
	ID                  string
	Org                 string
	ResponderID         string
	ResponderName       string
	ResponderDefinition string
	AnalysisID          string
	AnalysisJobID       string
	ObjectType          string // case_task, case_task_log, case, alert, case_artifact
	ObjectID            string
	CaseID              string // the case the object belongs to ("" for an alert)
	AlertID             string
	TaskID              string
	Status              string
	StartDate           time.Time
	EndDate             time.Time
	Operations          string // JSON array, each operation with its status once applied
	Report              string // JSON object
	Message             string // why a Waiting action has not reached its server yet; "" once it has
	record.Meta
}

// ActionStore persists responder actions.
type ActionStore interface {
	CreateAction(ctx context.Context, a Action) error
	// Action fails with ErrActionNotFound.
	Action(ctx context.Context, id string) (Action, error)
	UpdateAction(ctx context.Context, a Action) error
	// DeleteAction removes an action whose submission failed.
	DeleteAction(ctx context.Context, id string) error
	// Actions lists actions (the responder history of an object: ActionsOf).
	Actions(ctx context.Context, f search.Node, p search.Page) ([]Action, int64, error)
}

// ErrActionNotFound is returned for an unknown action or another organisation's.
var ErrActionNotFound = apperr.New(apperr.NotFound, "Action not found")

// ResponderObject is the object a responder runs on, as the API renders it (sent as the job's data).
type ResponderObject struct {
	Type    string // case_task, case_task_log, case, alert, case_artifact
	ID      string
	CaseID  string
	AlertID string
	TaskID  string
	TLP     int
	PAP     int
	Data    map[string]any
}

// NormalizeObjectType accepts the spellings clients send and returns the reference system's name.
func NormalizeObjectType(t string) (string, error) {
	switch strings.ToLower(t) {
	case "case_task", "task":
		return "case_task", nil
	case "case_task_log", "log", "task_log":
		return "case_task_log", nil
	case "case":
		return "case", nil
	case "alert":
		return "alert", nil
	case "case_artifact", "artifact", "observable":
		return "case_artifact", nil
	}
	return "", record.FieldError("objectType", "one of case_task, case_task_log, case, alert, case_artifact")
}

// ObjectTypeLabel is how actions show their object type (the contract shows Task and Log).
func ObjectTypeLabel(t string) string {
	switch t {
	case "case_task":
		return "Task"
	case "case_task_log":
		return "Log"
	case "case":
		return "Case"
	case "alert":
		return "Alert"
	case "case_artifact":
		return "Observable"
	}
	return t
}

// RunResponder starts a responder on an object. Without analysisID the first server (in configuration
// order) that offers the responder runs it. As for analyzer jobs, an action whose server cannot be reached
// is accepted Waiting, with a message, and submitted by the tracker when the server answers.
func (a *Analyses) RunResponder(ctx context.Context, c identity.Caller, analysisID, responderID string, obj ResponderObject) (Action, error) {
	if err := c.Require(identity.ManageAction); err != nil {
		return Action{}, err
	}
	if responderID == "" {
		return Action{}, record.FieldError("responderId", "required")
	}
	var srv AnalysisServer
	if analysisID != "" {
		s, err := a.server(c, analysisID)
		if err != nil {
			return Action{}, err
		}
		srv = s
	} else {
		for _, n := range a.usable(c) {
			ws, err := a.servers[n].Workers(ctx, true, "")
			if err != nil {
				continue
			}
			for _, w := range ws {
				if w.ID == responderID || w.Name == responderID {
					srv, responderID = a.servers[n], w.ID
					break
				}
			}
			if srv != nil {
				break
			}
		}
		if srv == nil {
			return Action{}, apperr.Errorf(apperr.NotFound, "no analysis server offers the responder %s", responderID)
		}
	}
	now := a.clock()
	act := Action{ID: record.NewID(now), Org: c.Org, ResponderID: responderID, AnalysisID: srv.Name(), ObjectType: obj.Type,
		ObjectID: obj.ID, CaseID: obj.CaseID, AlertID: obj.AlertID, TaskID: obj.TaskID, Status: JobWaiting,
		StartDate: now, Operations: "[]", Report: "{}", Meta: record.Meta{CreatedBy: c.Login, CreatedAt: now}}
	data, err := json.Marshal(obj.Data)
	if err != nil {
		// The object is the API's own rendering: failing to encode it is our fault (500, cause logged), not the client's.
		return Action{}, fmt.Errorf("encode the object of responder %s: %w", responderID, err)
	}
	act.Report = mustJSON(map[string]any{"object": json.RawMessage(data), "tlp": obj.TLP, "pap": obj.PAP})
	if err := a.actions.CreateAction(ctx, act); err != nil {
		return Action{}, err
	}
	a.hold(act.ID)
	defer a.release(act.ID)
	if err := a.pending.AddPending(ctx, Pending{ID: act.ID, Kind: "action", Server: srv.Name(), Org: c.Org, Since: now}); err != nil {
		return Action{}, err
	}
	remote, err := a.submitAction(ctx, act)
	switch {
	case apperr.Is(err, apperr.Unavailable):
		// Accepted all the same, as an analyzer job: the tracker submits it when the server answers.
		msg, uerr := a.unreachable(ctx, act.ID, act.AnalysisID, now, err)
		if uerr != nil {
			return Action{}, uerr
		}
		act.Message = msg
		if err := a.actions.UpdateAction(context.WithoutCancel(ctx), act); err != nil {
			return Action{}, err
		}
		return act, nil
	case err != nil && ctx.Err() != nil:
		return Action{}, err // the server may have it: the tracker resubmits it with the same Idempotency-Key
	case err != nil:
		_ = a.pending.RemovePending(context.WithoutCancel(ctx), act.ID)
		_ = a.actions.DeleteAction(context.WithoutCancel(ctx), act.ID)
		return Action{}, err
	}
	act.AnalysisJobID, act.ResponderName, act.ResponderDefinition = remote.ID, remote.WorkerName, remote.DefinitionID
	if remote.WorkerID != "" {
		act.ResponderID = remote.WorkerID // the id the server ran (see submitAction)
	}
	if err := a.pending.SetRemote(ctx, act.ID, remote.ID); err != nil {
		return Action{}, err
	}
	if err := a.actions.UpdateAction(ctx, act); err != nil {
		return Action{}, err
	}
	a.wake(srv.Name())
	return act, nil
}

// submitAction sends the action's object to its server; the object was kept in the record's report until
// the server accepts it, so a resubmission after a restart sends the same data.
func (a *Analyses) submitAction(ctx context.Context, act Action) (RemoteJob, error) {
	srv := a.servers[act.AnalysisID]
	if srv == nil {
		return RemoteJob{}, apperr.Errorf(apperr.BadRequest, "analysis server %s is no longer configured", act.AnalysisID)
	}
	var kept struct {
		Object map[string]any `json:"object"`
		TLP    int            `json:"tlp"`
		PAP    int            `json:"pap"`
	}
	dec := json.NewDecoder(strings.NewReader(act.Report))
	dec.UseNumber() // the object's numbers go to the responder as they were stored
	if err := dec.Decode(&kept); err != nil || kept.Object == nil {
		return RemoteJob{}, apperr.New(apperr.BadRequest, "the action's object is no longer available")
	}
	req := RemoteRequest{DataType: "thehive:" + act.ObjectType, Data: kept.Object, TLP: kept.TLP, PAP: kept.PAP}
	r, err := srv.Run(ctx, true, act.ResponderID, req, act.ID)
	if apperr.Is(err, apperr.NotFound) {
		// Another server's id for this responder (or its name), as for analyzer jobs (submitJob).
		if own, ok := a.idOn(ctx, act.Org, srv, true, act.ResponderID); ok {
			return srv.Run(ctx, true, own, req, act.ID)
		}
	}
	return r, err
}

// Action returns an action of the caller's organisation.
func (a *Analyses) Action(ctx context.Context, c identity.Caller, id string) (Action, error) {
	act, err := a.actions.Action(ctx, id)
	if err != nil {
		return Action{}, err
	}
	if act.Org != c.Org {
		return Action{}, ErrActionNotFound
	}
	return act, nil
}

// finishAction stores the responder's report and applies its operations.
func (a *Analyses) finishAction(ctx context.Context, p Pending, r RemoteJob) error {
	act, err := a.actions.Action(ctx, p.ID)
	if err != nil {
		return err
	}
	act.EndDate = r.EndDate
	if act.EndDate.IsZero() {
		act.EndDate = a.clock()
	}
	if r.WorkerName != "" {
		act.ResponderName, act.ResponderDefinition = r.WorkerName, r.DefinitionID
	}
	report := map[string]any{"success": false}
	var ops []map[string]any
	if rep := r.Report; rep != nil {
		report["success"] = rep.Success
		if rep.Success {
			report["full"] = rep.Full
			ops = rep.Operations
		} else {
			report["errorMessage"] = rep.ErrorMessage
		}
	}
	if r.Status == JobDeleted {
		report["errorMessage"] = "the job was deleted on the analysis server"
	}
	// Each operation is applied once: its outcome is stored before the next one runs, and a tracker that
	// restarts mid-way (the report is fetched again, in the same order) skips those already done.
	var done []map[string]any
	_ = json.Unmarshal([]byte(act.Operations), &done)
	act.Status = JobInProgress // not finished until every operation is applied
	for i, op := range ops {
		if i < len(done) && done[i]["type"] == op["type"] && done[i]["status"] != nil {
			op["status"], op["message"] = done[i]["status"], done[i]["message"]
			continue
		}
		if err := a.apply(ctx, act, op); err != nil {
			op["status"], op["message"] = "Failure", opMessage(err)
		} else {
			op["status"] = "Success"
			delete(op, "message")
		}
		act.Operations = mustJSON(ops[:i+1])
		if err := a.actions.UpdateAction(ctx, act); err != nil {
			return err
		}
	}
	if ops == nil {
		ops = []map[string]any{}
	}
	act.Status = r.Status
	if act.Status == JobDeleted {
		act.Status = JobFailure
	}
	act.Operations, act.Report = mustJSON(ops), mustJSON(report)
	return a.actions.UpdateAction(ctx, act)
}

// opInt reads an integral operation value: json.Number (reports are decoded with exact numbers) or float64.
func opInt(v any) (int, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		if err != nil {
			f, ferr := n.Float64()
			if ferr != nil || f != float64(int64(f)) {
				return 0, false
			}
			i = int64(f)
		}
		return int(i), true
	case float64:
		return int(n), true
	case int:
		return n, true
	case int64:
		return int(n), true
	}
	return 0, false
}

func opMessage(err error) string {
	if e := apperr.As(err); e != nil && e.Kind != apperr.Internal {
		return e.Message
	}
	return "internal error"
}

func opString(op map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := op[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// apply carries out one operation of a responder's report on the action's object or its case.
func (a *Analyses) apply(ctx context.Context, act Action, op map[string]any) error {
	c := system(act.CreatedBy, act.Org)
	typ, _ := op["type"].(string)
	needCase := func() error {
		if act.CaseID == "" {
			return apperr.Errorf(apperr.BadRequest, "%s needs a case; the action's object has none", typ)
		}
		return nil
	}
	switch typ {
	case "AddTagToCase":
		if err := needCase(); err != nil {
			return err
		}
		cs, err := a.cases.Case(ctx, act.CaseID)
		if err != nil {
			return err
		}
		_, err = a.svc.UpdateCase(ctx, c, act.CaseID, cases.CaseUpdate{Tags: record.Change[[]string]{Set: true, V: record.UnionTags(cs.Tags, []string{opString(op, "tag")})}})
		return err
	case "AddTagToArtifact":
		if act.ObjectType != "case_artifact" {
			return apperr.New(apperr.BadRequest, "AddTagToArtifact needs an observable")
		}
		o, err := a.observables.Observable(ctx, act.ObjectID)
		if err != nil {
			return err
		}
		_, err = a.svc.UpdateObservable(ctx, c, o.ID, cases.ObservableUpdate{Tags: record.Change[[]string]{Set: true, V: record.UnionTags(o.Tags, []string{opString(op, "tag")})}})
		return err
	case "AddTagToAlert":
		if act.AlertID == "" {
			return apperr.New(apperr.BadRequest, "AddTagToAlert needs an alert")
		}
		al, err := a.alerts.Alert(ctx, act.AlertID)
		if err != nil {
			return err
		}
		_, err = a.svc.UpdateAlert(ctx, c, act.AlertID, cases.AlertUpdate{Tags: record.Change[[]string]{Set: true, V: record.UnionTags(al.Tags, []string{opString(op, "tag")})}})
		return err
	case "CreateTask":
		if err := needCase(); err != nil {
			return err
		}
		_, err := a.tasks.Create(ctx, c, act.CaseID, task.Input{Title: opString(op, "title"), Description: opString(op, "description"),
			Group: opString(op, "group")})
		return err
	case "CloseTask":
		if act.TaskID == "" {
			return apperr.New(apperr.BadRequest, "CloseTask needs a task")
		}
		_, err := a.tasks.Update(ctx, c, act.TaskID, task.Update{Status: record.Change[string]{Set: true, V: task.Completed}})
		return err
	case "AddLogToTask":
		if act.TaskID == "" {
			return apperr.New(apperr.BadRequest, "AddLogToTask needs a task")
		}
		_, err := a.tasks.CreateLog(ctx, c, act.TaskID, opString(op, "content"), nil)
		return err
	case "MarkAlertAsRead":
		if act.AlertID == "" {
			return apperr.New(apperr.BadRequest, "MarkAlertAsRead needs an alert")
		}
		_, err := a.svc.MarkAsRead(ctx, c, act.AlertID, true)
		return err
	case "AddCustomFields":
		if err := needCase(); err != nil {
			return err
		}
		cs, err := a.cases.Case(ctx, act.CaseID)
		if err != nil {
			return err
		}
		in := map[string]customfield.Input{}
		for name, v := range cs.CustomFields {
			order := v.Order
			in[name] = customfield.Input{Type: string(v.Type), Value: v.Value, Order: &order}
		}
		in[opString(op, "name")] = customfield.Input{Type: opString(op, "tpe", "type"), Value: op["value"]}
		_, err = a.svc.UpdateCase(ctx, c, act.CaseID, cases.CaseUpdate{CustomFields: record.Change[map[string]customfield.Input]{Set: true, V: in}})
		return err
	case "AssignCase":
		if err := needCase(); err != nil {
			return err
		}
		_, err := a.svc.UpdateCase(ctx, c, act.CaseID, cases.CaseUpdate{Owner: record.Change[string]{Set: true, V: opString(op, "owner")}})
		return err
	case "AddArtifactToCase":
		if err := needCase(); err != nil {
			return err
		}
		n := cases.NewObservable{DataType: opString(op, "dataType"), Data: []string{opString(op, "data")},
			Message: opString(op, "message", "dataMessage")}
		if t, ok := opInt(op["tlp"]); ok {
			n.TLP = &t
		}
		n.IOC, _ = op["ioc"].(bool)
		n.Sighted, _ = op["sighted"].(bool)
		n.IgnoreSimilarity, _ = op["ignoreSimilarity"].(bool)
		if tags, ok := op["tags"].([]any); ok {
			for _, t := range tags {
				if s, ok := t.(string); ok {
					n.Tags = append(n.Tags, s)
				}
			}
		}
		_, failed, err := a.svc.CreateObservables(ctx, c, cases.Parent{Case: act.CaseID}, n)
		if err == nil && len(failed) > 0 {
			return failed[0].Err
		}
		return err
	}
	return apperr.Errorf(apperr.BadRequest, "unknown operation %q", fmt.Sprint(op["type"]))
}
