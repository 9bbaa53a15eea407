package store

import (
	"context"
	"fmt"
	"time"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/search"
)

// TaskStore keeps tasks and their logs.
type TaskStore struct {
	tasks *docstore.Collection
	logs  *docstore.Collection
}

var _ task.Store = (*TaskStore)(nil)

var (
	// taskSpec: the tasks of a case (default order _id, and by order); the organisation's task lists and the
	// waitingTasks query (status) in the default order and newest first. A parent's index holds the
	// organisation second: the domain scopes every list to the caller's organisation, and an index matching
	// both equalities is the one SQLite picks over the organisation's (it keeps no statistics).
	taskSpec = docstore.Spec{Name: "tasks", Tallies: []docstore.Tally{
		// X-Total of waitingTasks and the task lists by status or owner, on SQLite.
		{Name: "list", Paths: []string{record.PathOrg, "status", "owner"}},
	}, Indexes: []docstore.Index{
		{Name: "case_organisation__id", Keys: []docstore.Key{docstore.Asc(cases.PathCaseID), docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
		{Name: "case_organisation_order", Keys: []docstore.Key{docstore.Asc(cases.PathCaseID), docstore.Asc(record.PathOrg), docstore.Asc("order")}},
		{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
		{Name: "organisation_status__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("status"), docstore.Asc("_id")}},
		{Name: "organisation_status_startDate", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("status"), docstore.Desc("startDate")}},
	}}
	// logSpec: the logs of a task (default order _id, and by date), the logs of a case (deleted with it), the
	// organisation's log search, and the log holding a file.
	logSpec = docstore.Spec{Name: "logs", Arrays: []string{"attachment.hashes"}, Indexes: []docstore.Index{
		{Name: "task_organisation__id", Keys: []docstore.Key{docstore.Asc(task.PathTaskID), docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
		{Name: "task_organisation_date", Keys: []docstore.Key{docstore.Asc(task.PathTaskID), docstore.Asc(record.PathOrg), docstore.Asc("date")}},
		{Name: "case", Keys: []docstore.Key{docstore.Asc(cases.PathCaseID)}},
		{Name: "organisation__id", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("_id")}},
		{Name: "organisation_attachment", Keys: []docstore.Key{docstore.Asc(record.PathOrg), docstore.Asc("attachment.id")}},
	}}
)

// NewTaskStore returns the store and creates the indexes its lists use.
func NewTaskStore(ctx context.Context, db *docstore.DB) (*TaskStore, error) {
	tasks, err := db.Collection(ctx, taskSpec)
	if err != nil {
		return nil, err
	}
	logs, err := db.Collection(ctx, logSpec)
	if err != nil {
		return nil, err
	}
	return &TaskStore{tasks: tasks, logs: logs}, nil
}

type taskDoc struct {
	ID          string  `json:"_id"`
	Org         string  `json:"organisation"`
	CaseID      string  `json:"case"`
	Title       string  `json:"title"`
	Group       string  `json:"group"`
	Description string  `json:"description"`
	Owner       *string `json:"owner"`
	Status      string  `json:"status"`
	Flag        bool    `json:"flag"`
	StartDate   *int64  `json:"startDate"`
	EndDate     *int64  `json:"endDate"`
	DueDate     *int64  `json:"dueDate"`
	Order       int     `json:"order"`
	CreatedAt   int64   `json:"createdAt"`
	CreatedBy   string  `json:"createdBy"`
	UpdatedAt   *int64  `json:"updatedAt"`
	UpdatedBy   string  `json:"updatedBy,omitempty"`
}

func toTaskDoc(t task.Task) taskDoc {
	return taskDoc{ID: t.ID, Org: t.Org, CaseID: t.CaseID, Title: t.Title, Group: t.Group, Description: t.Description,
		Owner: nullString(t.Owner), Status: t.Status, Flag: t.Flag, StartDate: nullMillis(t.StartDate),
		EndDate: nullMillis(t.EndDate), DueDate: nullMillis(t.DueDate), Order: t.Order,
		CreatedAt: docstore.Millis(t.CreatedAt), CreatedBy: t.CreatedBy}
}

func (d taskDoc) task() task.Task {
	return task.Task{ID: d.ID, Org: d.Org, CaseID: d.CaseID, Title: d.Title, Group: d.Group, Description: d.Description,
		Owner: stringOf(d.Owner), Status: d.Status, Flag: d.Flag, StartDate: timeOf(d.StartDate),
		EndDate: timeOf(d.EndDate), DueDate: timeOf(d.DueDate), Order: d.Order,
		Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
}

// CreateTasks inserts tasks in one call.
func (s *TaskStore) CreateTasks(ctx context.Context, ts []task.Task) error {
	docs := make([]any, len(ts))
	for i, t := range ts {
		docs[i] = toTaskDoc(t)
	}
	res, err := s.tasks.InsertMany(ctx, docs)
	if err != nil {
		return fmt.Errorf("create tasks: %w", err)
	}
	for i, err := range res {
		if err != nil {
			return fmt.Errorf("create task %s: %w", ts[i].ID, err)
		}
	}
	return nil
}

// Task finds a task by id.
func (s *TaskStore) Task(ctx context.Context, id string) (task.Task, error) {
	var d taskDoc
	if err := get(ctx, s.tasks, id, &d, task.ErrNotFound); err != nil {
		return task.Task{}, err
	}
	return d.task(), nil
}

// Tasks lists tasks.
func (s *TaskStore) Tasks(ctx context.Context, f search.Node, p search.Page) ([]task.Task, int64, error) {
	return page(ctx, s.tasks, f, p, taskDoc.task)
}

// UpdateTask writes the named fields of t.
func (s *TaskStore) UpdateTask(ctx context.Context, t task.Task, fields []string, by string, at time.Time) (task.Task, error) {
	d := toTaskDoc(t)
	values := map[string]any{
		"title": d.Title, "group": d.Group, "description": d.Description, "owner": d.Owner, "status": d.Status,
		"flag": d.Flag, "startDate": d.StartDate, "endDate": d.EndDate, "dueDate": d.DueDate, "order": d.Order,
	}
	u, err := setFields(stamp(by, at), "task", values, fields)
	if err != nil {
		return task.Task{}, err
	}
	var out taskDoc
	if err := findOneAndUpdate(ctx, s.tasks, docstore.ID(t.ID), u, &out, task.ErrNotFound); err != nil {
		return task.Task{}, err
	}
	return out.task(), nil
}

// CloseCaseTasks cancels the Waiting tasks of a case and completes its InProgress ones.
func (s *TaskStore) CloseCaseTasks(ctx context.Context, caseID, by string, at time.Time) error {
	for from, to := range map[string]string{task.Waiting: task.Cancel, task.InProgress: task.Completed} {
		u := stamp(by, at).Set("status", to).Set("endDate", docstore.Millis(at))
		if _, err := s.tasks.UpdateMany(ctx, docstore.And(docstore.Eq(cases.PathCaseID, caseID), docstore.Eq("status", from)), u); err != nil {
			return fmt.Errorf("close tasks of case %s: %w", caseID, err)
		}
	}
	return nil
}

// DeleteCaseTasks removes the logs and then the tasks of a case.
func (s *TaskStore) DeleteCaseTasks(ctx context.Context, caseID string) error {
	if _, err := s.logs.DeleteMany(ctx, docstore.Eq(cases.PathCaseID, caseID)); err != nil {
		return fmt.Errorf("delete logs of case %s: %w", caseID, err)
	}
	if _, err := s.tasks.DeleteMany(ctx, docstore.Eq(cases.PathCaseID, caseID)); err != nil {
		return fmt.Errorf("delete tasks of case %s: %w", caseID, err)
	}
	return nil
}

// CountTasks counts the tasks of a case by status.
func (s *TaskStore) CountTasks(ctx context.Context, caseID string) (map[string]int64, error) {
	groups, err := s.tasks.GroupCount(ctx, docstore.Eq(cases.PathCaseID, caseID), "status", 0)
	if err != nil {
		return nil, fmt.Errorf("count tasks of case %s: %w", caseID, err)
	}
	out := map[string]int64{}
	for _, g := range groups {
		st, _ := g.Value.(string)
		out[st] += g.Count
	}
	return out, nil
}

type attachmentDoc struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	ContentType string   `json:"contentType"`
	Size        int64    `json:"size"`
	Hashes      []string `json:"hashes"`
}

type logDoc struct {
	ID         string         `json:"_id"`
	Org        string         `json:"organisation"`
	CaseID     string         `json:"case"`
	TaskID     string         `json:"task"`
	Message    string         `json:"message"`
	Date       int64          `json:"date"`
	Attachment *attachmentDoc `json:"attachment,omitempty"`
	CreatedAt  int64          `json:"createdAt"`
	CreatedBy  string         `json:"createdBy"`
	UpdatedAt  *int64         `json:"updatedAt"`
	UpdatedBy  string         `json:"updatedBy,omitempty"`
}

func (d logDoc) log() task.Log {
	l := task.Log{ID: d.ID, Org: d.Org, CaseID: d.CaseID, TaskID: d.TaskID, Message: d.Message, Date: docstore.Time(d.Date),
		Meta: record.Meta{CreatedAt: docstore.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
	if a := d.Attachment; a != nil {
		l.Attachment = &record.Attachment{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Hashes: a.Hashes}
	}
	return l
}

// CreateLog inserts a log.
func (s *TaskStore) CreateLog(ctx context.Context, l task.Log) error {
	d := logDoc{ID: l.ID, Org: l.Org, CaseID: l.CaseID, TaskID: l.TaskID, Message: l.Message, Date: docstore.Millis(l.Date),
		CreatedAt: docstore.Millis(l.CreatedAt), CreatedBy: l.CreatedBy}
	if a := l.Attachment; a != nil {
		d.Attachment = &attachmentDoc{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Hashes: a.Hashes}
	}
	if err := s.logs.Insert(ctx, d); err != nil {
		return fmt.Errorf("create log: %w", err)
	}
	return nil
}

// Log finds a log by id.
func (s *TaskStore) Log(ctx context.Context, id string) (task.Log, error) {
	var d logDoc
	if err := get(ctx, s.logs, id, &d, task.ErrLogNotFound); err != nil {
		return task.Log{}, err
	}
	return d.log(), nil
}

// Logs lists logs.
func (s *TaskStore) Logs(ctx context.Context, f search.Node, p search.Page) ([]task.Log, int64, error) {
	return page(ctx, s.logs, f, p, logDoc.log)
}

// UpdateLogMessage sets a log's message.
func (s *TaskStore) UpdateLogMessage(ctx context.Context, id, message, by string, at time.Time) (task.Log, error) {
	var out logDoc
	if err := findOneAndUpdate(ctx, s.logs, docstore.ID(id), stamp(by, at).Set("message", message), &out, task.ErrLogNotFound); err != nil {
		return task.Log{}, err
	}
	return out.log(), nil
}

// DeleteLog removes a log.
func (s *TaskStore) DeleteLog(ctx context.Context, id string) error {
	ok, err := s.logs.DeleteOne(ctx, docstore.ID(id))
	if err != nil {
		return fmt.Errorf("delete log %s: %w", id, err)
	}
	if !ok {
		return fmt.Errorf("delete log %s: %w", id, task.ErrLogNotFound)
	}
	return nil
}

// LogWithAttachment finds a log of the organisation that holds the file.
func (s *TaskStore) LogWithAttachment(ctx context.Context, org, fileID string) (task.Log, error) {
	var d logDoc
	err := findOne(ctx, s.logs, docstore.And(docstore.Eq(record.PathOrg, org), docstore.Eq("attachment.id", fileID)), &d,
		task.ErrLogNotFound)
	if err != nil {
		return task.Log{}, err
	}
	return d.log(), nil
}
