package task

import (
	"context"
	"slices"
	"time"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/search"
)

// Cases finds the case of the caller's organisation that tasks are added to or listed for, by id ("~42") or
// number, and returns its id; *cases.Service implements it.
type Cases interface {
	CaseID(ctx context.Context, c identity.Caller, idOrNumber string) (string, error)
}

// Stores are what the task service consumes.
type Stores struct {
	Tasks   Store
	Files   record.FileStore
	Members identity.Members
}

// Service holds the rules of tasks and logs. Every method takes the caller and works in its organisation:
// another organisation's records are not found (404).
type Service struct {
	cases   Cases
	tasks   Store
	files   record.FileStore
	members identity.Members
	now     func() time.Time
}

// NewService returns the task service; cases finds the cases the tasks belong to.
func NewService(cases Cases, st Stores, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{cases: cases, tasks: st.Tasks, files: st.Files, members: st.Members, now: now}
}

func (s *Service) clock() time.Time { return record.Millis(s.now()) }

// Create adds a task to a case of the caller's organisation (manageTask).
func (s *Service) Create(ctx context.Context, c identity.Caller, caseID string, n Input) (Task, error) {
	if err := c.Require(identity.ManageTask); err != nil {
		return Task{}, err
	}
	csID, err := s.cases.CaseID(ctx, c, caseID)
	if err != nil {
		return Task{}, err
	}
	var p record.Problems
	t := Check(&p, "", n)
	if err := p.Err(); err != nil {
		return Task{}, err
	}
	if err := identity.CheckOwner(ctx, s.members, "owner", c.Org, t.Owner); err != nil {
		return Task{}, err
	}
	now := s.clock()
	t.ID, t.Org, t.CaseID = record.NewID(now), c.Org, csID
	t.Meta = record.Meta{CreatedAt: now, CreatedBy: c.Login}
	t.Enter(t.Status, now, c.Login, n.StartDate != nil, n.EndDate != nil)
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
		return Task{}, ErrNotFound
	}
	return t, nil
}

// List lists and searches the tasks of the caller's organisation, or of one of its cases when caseID is set.
func (s *Service) List(ctx context.Context, c identity.Caller, caseID string, f search.Node, p search.Page) ([]Task, int64, error) {
	scope := record.InOrg(c.Org)
	if caseID != "" {
		csID, err := s.cases.CaseID(ctx, c, caseID)
		if err != nil {
			return nil, 0, err
		}
		scope = search.Node{Op: search.OpAnd, Children: []search.Node{scope, {Op: search.OpEq, Path: PathCaseID, Value: csID}}}
	}
	return s.tasks.Tasks(ctx, record.And(f, scope), p)
}

// Update changes a task (manageTask); a status change sets the dates as Enter describes.
func (s *Service) Update(ctx context.Context, c identity.Caller, id string, u Update) (Task, error) {
	if err := c.Require(identity.ManageTask); err != nil {
		return Task{}, err
	}
	t, err := s.Task(ctx, c, id)
	if err != nil {
		return Task{}, err
	}
	var p record.Problems
	var fields []string
	p.ChangeText(&fields, "title", u.Title, &t.Title, true, record.MaxTitle)
	p.ChangeText(&fields, "group", u.Group, &t.Group, false, record.MaxShort)
	p.ChangeText(&fields, "description", u.Description, &t.Description, false, record.MaxDescription)
	p.ChangeText(&fields, "owner", u.Owner, &t.Owner, false, record.MaxShort)
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
	p.ChangeFlag(&fields, "flag", u.Flag, &t.Flag)
	p.ChangeInt(&fields, "order", u.Order, &t.Order)
	if u.Status.Set {
		if u.Status.Null || !slices.Contains(Statuses(), u.Status.V) {
			p.Add("status", "one of Waiting, InProgress, Completed, Cancel")
		} else {
			fields = append(fields, "status")
			fields = append(fields, t.Enter(u.Status.V, s.clock(), c.Login, u.StartDate.Set, u.EndDate.Set)...)
		}
	}
	if err := p.Err(); err != nil {
		return Task{}, err
	}
	if u.Owner.Value() {
		if err := identity.CheckOwner(ctx, s.members, "owner", c.Org, t.Owner); err != nil {
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
func (s *Service) CreateLog(ctx context.Context, c identity.Caller, taskID, message string, up *record.Upload) (Log, error) {
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
		l.Attachment = &record.Attachment{ID: f.ID, Name: name, ContentType: ct, Size: f.Size,
			Hashes: []string{f.SHA256, f.SHA1, f.MD5}}
	}
	// The task starts first: if the log then fails, a started task is what the caller was about anyway,
	// whereas a log on a task still Waiting would contradict the rule.
	if t.Status == Waiting {
		fields := append([]string{"status"}, t.Enter(InProgress, now, c.Login, false, false)...)
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
