// Package task owns the tasks of cases and their logs (the journal of a task, with its files): the types,
// the rules (defaults, validation, the effects of a status change, what a caller may do with them in its
// organisation) and the interface of the store it consumes. The cases the tasks belong to are package
// cases', which creates, closes, merges and deletes the tasks of a case through the same store.
package task

import (
	"context"
	"slices"
	"time"

	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Task statuses (spec §2).
const (
	Waiting    = "Waiting"
	InProgress = "InProgress"
	Completed  = "Completed"
	Cancel     = "Cancel"
)

// Statuses lists the task statuses.
func Statuses() []string { return []string{Waiting, InProgress, Completed, Cancel} }

// Errors of tasks and logs.
var (
	ErrNotFound    = apperr.New(apperr.NotFound, "Task not found")
	ErrLogNotFound = apperr.New(apperr.NotFound, "Log not found")
)

// Task is a piece of work on a case. Zero times are null.
type Task struct {
	ID          string
	Org         string
	CaseID      string
	Title       string
	Group       string
	Description string
	Owner       string
	Status      string
	Flag        bool
	StartDate   time.Time
	EndDate     time.Time
	DueDate     time.Time
	Order       int
	record.Meta
}

// Input is a task as a client creates it (alone, in a case's tasks, or in a template's).
type Input struct {
	Title       string
	Group       string
	Description string
	Owner       string
	Status      string
	Flag        bool
	StartDate   *time.Time
	EndDate     *time.Time
	DueDate     *time.Time
	Order       *int
}

// Update holds the changes to a task.
type Update struct {
	Title       record.Change[string]
	Group       record.Change[string]
	Description record.Change[string]
	Owner       record.Change[string]
	Status      record.Change[string]
	Flag        record.Change[bool]
	StartDate   record.Change[time.Time]
	EndDate     record.Change[time.Time]
	DueDate     record.Change[time.Time]
	Order       record.Change[int]
}

// Log is an entry of a task's journal, with an optional attached file.
type Log struct {
	ID         string
	Org        string
	CaseID     string
	TaskID     string
	Message    string
	Date       time.Time
	Attachment *record.Attachment
	record.Meta
}

// Store persists tasks and their logs.
type Store interface {
	CreateTasks(ctx context.Context, ts []Task) error
	// Task fails with ErrNotFound.
	Task(ctx context.Context, id string) (Task, error)
	Tasks(ctx context.Context, f search.Node, p search.Page) ([]Task, int64, error)
	// UpdateTask writes the named fields (Update's names: title, status, startDate…) of t.
	UpdateTask(ctx context.Context, t Task, fields []string, by string, at time.Time) (Task, error)
	// CloseCaseTasks ends the tasks of a closed case: Waiting ones are cancelled, InProgress ones completed.
	CloseCaseTasks(ctx context.Context, caseID, by string, at time.Time) error
	// DeleteCaseTasks removes the tasks of a case and their logs.
	DeleteCaseTasks(ctx context.Context, caseID string) error
	// CountTasks counts the tasks of a case by status.
	CountTasks(ctx context.Context, caseID string) (map[string]int64, error)

	CreateLog(ctx context.Context, l Log) error
	// Log fails with ErrLogNotFound.
	Log(ctx context.Context, id string) (Log, error)
	Logs(ctx context.Context, f search.Node, p search.Page) ([]Log, int64, error)
	// LogWithAttachment finds a log of the organisation holding the file; it fails with ErrLogNotFound.
	LogWithAttachment(ctx context.Context, org, fileID string) (Log, error)
	// UpdateLogMessage sets a log's message; it fails with ErrLogNotFound.
	UpdateLogMessage(ctx context.Context, id, message, by string, at time.Time) (Log, error)
	// DeleteLog removes a log; it fails with ErrLogNotFound.
	DeleteLog(ctx context.Context, id string) error
}

// Storage paths of the task and log references.
const (
	PathCaseID = "case"
	PathTaskID = "task"
)

// Fields and LogFields are the allow-lists of task and log searches.
var (
	Fields = search.Fields{
		"_id": {Path: "_id"}, "id": {Path: "_id"}, "title": {Path: "title"}, "group": {Path: "group"},
		"description": {Path: "description"}, "owner": {Path: "owner"}, "assignee": {Path: "owner"},
		"status": {Path: "status"}, "flag": {Path: "flag", Type: search.Bool},
		"startDate": {Path: "startDate", Type: search.Number}, "endDate": {Path: "endDate", Type: search.Number},
		"dueDate": {Path: "dueDate", Type: search.Number}, "order": {Path: "order", Type: search.Number},
		"case":      {Path: PathCaseID},
		"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
		"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
		"_createdAt": {Path: "createdAt", Type: search.Number}, "_createdBy": {Path: "createdBy"},
		"_updatedAt": {Path: "updatedAt", Type: search.Number}, "_updatedBy": {Path: "updatedBy"},
	}
	LogFields = search.Fields{
		"_id": {Path: "_id"}, "id": {Path: "_id"}, "message": {Path: "message"},
		"startDate": {Path: "date", Type: search.Number}, "date": {Path: "date", Type: search.Number},
		"owner": {Path: "createdBy"}, "task": {Path: PathTaskID}, "case": {Path: PathCaseID},
		"attachment.id": {Path: "attachment.id"}, "attachment.name": {Path: "attachment.name"},
		"createdAt": {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
		"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
	}
)

// Check validates a task's input and returns the task it describes (status default Waiting, group default
// "default"); field prefixes the names of its problems.
func Check(p *record.Problems, field string, n Input) Task {
	prefix := ""
	if field != "" {
		prefix = field + "."
	}
	p.Text(prefix+"title", n.Title, true, record.MaxTitle)
	p.Text(prefix+"group", n.Group, false, record.MaxShort)
	p.Text(prefix+"description", n.Description, false, record.MaxDescription)
	p.Text(prefix+"owner", n.Owner, false, record.MaxShort)
	if n.Status != "" && !slices.Contains(Statuses(), n.Status) {
		p.Add(prefix+"status", "one of Waiting, InProgress, Completed, Cancel")
	}
	t := Task{Title: n.Title, Group: n.Group, Description: n.Description, Owner: n.Owner, Status: n.Status, Flag: n.Flag}
	if t.Group == "" {
		t.Group = "default"
	}
	if t.Status == "" {
		t.Status = Waiting
	}
	if n.StartDate != nil {
		t.StartDate = record.Millis(*n.StartDate)
	}
	if n.EndDate != nil {
		t.EndDate = record.Millis(*n.EndDate)
	}
	if n.DueDate != nil {
		t.DueDate = record.Millis(*n.DueDate)
	}
	if n.Order != nil {
		t.Order = *n.Order
	}
	return t
}

// Enter applies the effects of entering a status: InProgress starts the task (startDate, owner = who moved
// it when it had none) and reopens it (endDate cleared); Completed and Cancel end it (endDate; Completed also
// sets a missing startDate); Waiting clears both dates. Dates the request gives explicitly are kept. It
// returns the fields it changed.
func (t *Task) Enter(status string, now time.Time, by string, keepStart, keepEnd bool) []string {
	var changed []string
	set := func(name string, cond bool, f func()) {
		if cond {
			f()
			changed = append(changed, name)
		}
	}
	t.Status = status
	switch status {
	case InProgress:
		set("startDate", !keepStart && t.StartDate.IsZero(), func() { t.StartDate = now })
		set("endDate", !keepEnd && !t.EndDate.IsZero(), func() { t.EndDate = time.Time{} })
		set("owner", t.Owner == "", func() { t.Owner = by })
	case Completed:
		set("startDate", !keepStart && t.StartDate.IsZero(), func() { t.StartDate = now })
		set("endDate", !keepEnd && t.EndDate.IsZero(), func() { t.EndDate = now })
	case Cancel:
		set("endDate", !keepEnd && t.EndDate.IsZero(), func() { t.EndDate = now })
	case Waiting:
		set("startDate", !keepStart && !t.StartDate.IsZero(), func() { t.StartDate = time.Time{} })
		set("endDate", !keepEnd && !t.EndDate.IsZero(), func() { t.EndDate = time.Time{} })
	}
	return changed
}
