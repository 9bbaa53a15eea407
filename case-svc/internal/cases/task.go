package cases

import (
	"context"
	"io"
	"slices"
	"time"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Task statuses (spec §2).
const (
	TaskWaiting    = "Waiting"
	TaskInProgress = "InProgress"
	TaskCompleted  = "Completed"
	TaskCancel     = "Cancel"
)

// TaskStatuses lists the task statuses.
func TaskStatuses() []string { return []string{TaskWaiting, TaskInProgress, TaskCompleted, TaskCancel} }

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

// NewTask is a task as a client creates it (alone, in a case's tasks, or in a template's).
type NewTask struct {
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

// TaskUpdate holds the changes to a task.
type TaskUpdate struct {
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
	Attachment *Attachment
	record.Meta
}

// Attachment describes a file attached to a record. ID is the content's SHA-256 in the attachment store.
type Attachment struct {
	ID          string
	Name        string
	ContentType string
	Size        int64
	Hashes      []string // sha256, sha1, md5
}

// Upload is a file a client sends.
type Upload struct {
	Name        string
	ContentType string
	Body        io.Reader
}

// File is a stored file's content description.
type File struct {
	ID     string
	Size   int64
	SHA256 string
	SHA1   string
	MD5    string
}

// FileStore keeps file contents, stored once per content.
type FileStore interface {
	Put(ctx context.Context, r io.Reader) (File, error)
	// Open fails with ErrAttachmentNotFound.
	Open(ctx context.Context, id string) (io.ReadCloser, File, error)
}

// TaskStore persists tasks and their logs.
type TaskStore interface {
	CreateTasks(ctx context.Context, ts []Task) error
	// Task fails with ErrTaskNotFound.
	Task(ctx context.Context, id string) (Task, error)
	Tasks(ctx context.Context, f search.Node, p search.Page) ([]Task, int64, error)
	// UpdateTask writes the named fields (TaskUpdate's names: title, status, startDate…) of t.
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

// TaskFields and LogFields are the allow-lists of task and log searches.
var (
	TaskFields = search.Fields{
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

// checkNewTask validates a task's input and returns the task it describes (status default Waiting, group
// default "default").
func checkNewTask(p *record.Problems, field string, n NewTask) Task {
	prefix := ""
	if field != "" {
		prefix = field + "."
	}
	p.Text(prefix+"title", n.Title, true, record.MaxTitle)
	p.Text(prefix+"group", n.Group, false, record.MaxShort)
	p.Text(prefix+"description", n.Description, false, record.MaxDescription)
	p.Text(prefix+"owner", n.Owner, false, record.MaxShort)
	if n.Status != "" && !slices.Contains(TaskStatuses(), n.Status) {
		p.Add(prefix+"status", "one of Waiting, InProgress, Completed, Cancel")
	}
	t := Task{Title: n.Title, Group: n.Group, Description: n.Description, Owner: n.Owner, Status: n.Status, Flag: n.Flag}
	if t.Group == "" {
		t.Group = "default"
	}
	if t.Status == "" {
		t.Status = TaskWaiting
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

// enter applies the effects of entering a status: InProgress starts the task (startDate, owner = who moved
// it when it had none) and reopens it (endDate cleared); Completed and Cancel end it (endDate; Completed also
// sets a missing startDate); Waiting clears both dates. Dates the request gives explicitly are kept. It
// returns the fields it changed.
func (t *Task) enter(status string, now time.Time, by string, keepStart, keepEnd bool) []string {
	var changed []string
	set := func(name string, cond bool, f func()) {
		if cond {
			f()
			changed = append(changed, name)
		}
	}
	t.Status = status
	switch status {
	case TaskInProgress:
		set("startDate", !keepStart && t.StartDate.IsZero(), func() { t.StartDate = now })
		set("endDate", !keepEnd && !t.EndDate.IsZero(), func() { t.EndDate = time.Time{} })
		set("owner", t.Owner == "", func() { t.Owner = by })
	case TaskCompleted:
		set("startDate", !keepStart && t.StartDate.IsZero(), func() { t.StartDate = now })
		set("endDate", !keepEnd && t.EndDate.IsZero(), func() { t.EndDate = now })
	case TaskCancel:
		set("endDate", !keepEnd && t.EndDate.IsZero(), func() { t.EndDate = now })
	case TaskWaiting:
		set("startDate", !keepStart && !t.StartDate.IsZero(), func() { t.StartDate = time.Time{} })
		set("endDate", !keepEnd && !t.EndDate.IsZero(), func() { t.EndDate = time.Time{} })
	}
	return changed
}

// CreateTask adds a task to a case of the caller's organisation (manageTask).
func (s *Service) CreateTask(ctx context.Context, c identity.Caller, caseID string, n NewTask) (Task, error) {
	if err := c.Require(identity.ManageTask); err != nil {
		return Task{}, err
	}
	cs, err := s.Case(ctx, c, caseID)
	if err != nil {
		return Task{}, err
	}
	var p record.Problems
	t := checkNewTask(&p, "", n)
	if err := p.Err(); err != nil {
		return Task{}, err
	}
	if err := s.checkOwner(ctx, "owner", c.Org, t.Owner); err != nil {
		return Task{}, err
	}
	now := s.clock()
	t.ID, t.Org, t.CaseID = record.NewID(now), c.Org, cs.ID
	t.Meta = record.Meta{CreatedAt: now, CreatedBy: c.Login}
	t.enter(t.Status, now, c.Login, n.StartDate != nil, n.EndDate != nil)
	if err := s.tasks.CreateTasks(ctx, []Task{t}); err != nil {
		return Task{}, err
	}
	return t, nil
}

// Task returns a task of the caller's organisation.
func (s *Service) Task(ctx context.Context, c identity.Caller, id string) (Task, error) {
	t, err := s.tasks.Task(ctx, id)
	if err != nil {
		return Task{}, err
	}
	if t.Org != c.Org {
		return Task{}, ErrTaskNotFound
	}
	return t, nil
}

// Tasks lists and searches the tasks of the caller's organisation, or of one of its cases when caseID is set.
func (s *Service) Tasks(ctx context.Context, c identity.Caller, caseID string, f search.Node, p search.Page) ([]Task, int64, error) {
	scope := record.InOrg(c.Org)
	if caseID != "" {
		cs, err := s.Case(ctx, c, caseID)
		if err != nil {
			return nil, 0, err
		}
		scope = search.Node{Op: search.OpAnd, Children: []search.Node{scope, {Op: search.OpEq, Path: PathCaseID, Value: cs.ID}}}
	}
	return s.tasks.Tasks(ctx, record.And(f, scope), p)
}

// UpdateTask changes a task (manageTask); a status change sets the dates as enter describes.
func (s *Service) UpdateTask(ctx context.Context, c identity.Caller, id string, u TaskUpdate) (Task, error) {
	if err := c.Require(identity.ManageTask); err != nil {
		return Task{}, err
	}
	t, err := s.Task(ctx, c, id)
	if err != nil {
		return Task{}, err
	}
	var p record.Problems
	var fields []string
	str := func(name string, ch record.Change[string], dst *string, required bool, max int) {
		if !ch.Set {
			return
		}
		if ch.Null && required {
			p.Add(name, "required")
			return
		}
		p.Text(name, ch.V, required, max)
		*dst = ch.V
		fields = append(fields, name)
	}
	str("title", u.Title, &t.Title, true, record.MaxTitle)
	str("group", u.Group, &t.Group, false, record.MaxShort)
	str("description", u.Description, &t.Description, false, record.MaxDescription)
	str("owner", u.Owner, &t.Owner, false, record.MaxShort)
	date := func(name string, ch record.Change[time.Time], dst *time.Time) {
		if ch.Set {
			*dst = time.Time{}
			if !ch.Null {
				*dst = record.Millis(ch.V)
			}
			fields = append(fields, name)
		}
	}
	date("startDate", u.StartDate, &t.StartDate)
	date("endDate", u.EndDate, &t.EndDate)
	date("dueDate", u.DueDate, &t.DueDate)
	if u.Flag.Set {
		t.Flag = u.Flag.V
		fields = append(fields, "flag")
	}
	if u.Order.Set {
		t.Order = u.Order.V
		fields = append(fields, "order")
	}
	if u.Status.Set {
		if u.Status.Null || !slices.Contains(TaskStatuses(), u.Status.V) {
			p.Add("status", "one of Waiting, InProgress, Completed, Cancel")
		} else {
			fields = append(fields, "status")
			fields = append(fields, t.enter(u.Status.V, s.clock(), c.Login, u.StartDate.Set, u.EndDate.Set)...)
		}
	}
	if err := p.Err(); err != nil {
		return Task{}, err
	}
	if u.Owner.Value() {
		if err := s.checkOwner(ctx, "owner", c.Org, t.Owner); err != nil {
			return Task{}, err
		}
	}
	if len(fields) == 0 {
		return t, nil
	}
	return s.tasks.UpdateTask(ctx, t, fields, c.Login, s.clock())
}

// CreateLog adds an entry, with an optional file, to a task of the caller's organisation (manageTask). A log
// on a Waiting task starts it.
func (s *Service) CreateLog(ctx context.Context, c identity.Caller, taskID, message string, up *Upload) (Log, error) {
	if err := c.Require(identity.ManageTask); err != nil {
		return Log{}, err
	}
	t, err := s.Task(ctx, c, taskID)
	if err != nil {
		return Log{}, err
	}
	var p record.Problems
	p.Text("message", message, true, record.MaxDescription)
	if up != nil {
		p.Text("attachment", up.Name, false, record.MaxShort)
		p.Text("attachment", up.ContentType, false, record.MaxShort)
	}
	if err := p.Err(); err != nil {
		return Log{}, err
	}
	now := s.clock()
	l := Log{ID: record.NewID(now), Org: c.Org, CaseID: t.CaseID, TaskID: t.ID, Message: message, Date: now,
		Meta: record.Meta{CreatedAt: now, CreatedBy: c.Login}}
	if up != nil {
		f, err := s.files.Put(ctx, up.Body)
		if err != nil {
			return Log{}, err
		}
		name, ct := up.Name, up.ContentType
		if name == "" {
			name = f.ID
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		l.Attachment = &Attachment{ID: f.ID, Name: name, ContentType: ct, Size: f.Size,
			Hashes: []string{f.SHA256, f.SHA1, f.MD5}}
	}
	// The task starts first: if the log then fails, a started task is what the caller was about anyway,
	// whereas a log on a task still Waiting would contradict the rule.
	if t.Status == TaskWaiting {
		fields := append([]string{"status"}, t.enter(TaskInProgress, now, c.Login, false, false)...)
		if _, err := s.tasks.UpdateTask(ctx, t, fields, c.Login, now); err != nil {
			return Log{}, err
		}
	}
	if err := s.tasks.CreateLog(ctx, l); err != nil {
		return Log{}, err
	}
	return l, nil
}

// Log returns a log of the caller's organisation.
func (s *Service) Log(ctx context.Context, c identity.Caller, id string) (Log, error) {
	l, err := s.tasks.Log(ctx, id)
	if err != nil {
		return Log{}, err
	}
	if l.Org != c.Org {
		return Log{}, ErrLogNotFound
	}
	return l, nil
}

// UpdateLog changes the message of a log of the caller's organisation (manageTask), the one attribute of a
// log the reference system lets a client change.
func (s *Service) UpdateLog(ctx context.Context, c identity.Caller, id, message string) (Log, error) {
	if err := c.Require(identity.ManageTask); err != nil {
		return Log{}, err
	}
	l, err := s.Log(ctx, c, id)
	if err != nil {
		return Log{}, err
	}
	var p record.Problems
	p.Text("message", message, true, record.MaxDescription)
	if err := p.Err(); err != nil {
		return Log{}, err
	}
	return s.tasks.UpdateLogMessage(ctx, l.ID, message, c.Login, s.clock())
}

// DeleteLog removes a log of the caller's organisation (manageTask). Its file stays in the attachment store
// (stored once per content, other records may hold it); the organisation's grant to it goes with the log.
func (s *Service) DeleteLog(ctx context.Context, c identity.Caller, id string) error {
	if err := c.Require(identity.ManageTask); err != nil {
		return err
	}
	l, err := s.Log(ctx, c, id)
	if err != nil {
		return err
	}
	return s.tasks.DeleteLog(ctx, l.ID)
}

// Logs lists and searches the logs of the caller's organisation, or of one of its tasks when taskID is set.
func (s *Service) Logs(ctx context.Context, c identity.Caller, taskID string, f search.Node, p search.Page) ([]Log, int64, error) {
	scope := record.InOrg(c.Org)
	if taskID != "" {
		t, err := s.Task(ctx, c, taskID)
		if err != nil {
			return nil, 0, err
		}
		scope = search.Node{Op: search.OpAnd, Children: []search.Node{scope, {Op: search.OpEq, Path: PathTaskID, Value: t.ID}}}
	}
	return s.tasks.Logs(ctx, record.And(f, scope), p)
}

// Attachment opens a file that a record (an observable or a log) of the caller's organisation holds.
func (s *Service) Attachment(ctx context.Context, c identity.Caller, id string) (io.ReadCloser, Attachment, error) {
	a, err := s.observables.HeldFile(ctx, c.Org, id)
	if apperr.Is(err, apperr.NotFound) {
		var l Log
		l, err = s.tasks.LogWithAttachment(ctx, c.Org, id)
		if apperr.Is(err, apperr.NotFound) {
			return nil, Attachment{}, ErrAttachmentNotFound
		}
		if err == nil {
			a = *l.Attachment
		}
	}
	if err != nil {
		return nil, Attachment{}, err
	}
	r, _, err := s.files.Open(ctx, id)
	if err != nil {
		return nil, Attachment{}, err
	}
	return r, a, nil
}
