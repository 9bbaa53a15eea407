package mongostore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/pkg/mongox"
	"github.com/openir/platform/pkg/search"
)

// TaskStore keeps tasks and their logs.
type TaskStore struct {
	tasks *mongo.Collection
	logs  *mongo.Collection
}

var _ cases.TaskStore = (*TaskStore)(nil)

// NewTaskStore returns the store and creates the indexes its lists use.
func NewTaskStore(ctx context.Context, db *mongox.DB) (*TaskStore, error) {
	s := &TaskStore{tasks: db.Collection("tasks"), logs: db.Collection("logs")}
	err := mongox.EnsureIndexes(ctx, s.tasks,
		mongox.Index{Name: "case_order", Keys: bson.D{{Key: cases.PathCaseID, Value: 1}, {Key: "order", Value: 1}}},
		mongox.Index{Name: "organisation_status", Keys: bson.D{{Key: cases.PathOrg, Value: 1}, {Key: "status", Value: 1}}},
	)
	if err != nil {
		return nil, err
	}
	err = mongox.EnsureIndexes(ctx, s.logs,
		mongox.Index{Name: "task_date", Keys: bson.D{{Key: cases.PathTaskID, Value: 1}, {Key: "date", Value: 1}}},
		mongox.Index{Name: "case", Keys: bson.D{{Key: cases.PathCaseID, Value: 1}}},
		mongox.Index{Name: "organisation_attachment", Keys: bson.D{{Key: cases.PathOrg, Value: 1}, {Key: "attachment.id", Value: 1}}},
	)
	if err != nil {
		return nil, err
	}
	return s, nil
}

type taskDoc struct {
	ID          string  `bson:"_id"`
	Org         string  `bson:"organisation"`
	CaseID      string  `bson:"case"`
	Title       string  `bson:"title"`
	Group       string  `bson:"group"`
	Description string  `bson:"description"`
	Owner       *string `bson:"owner"`
	Status      string  `bson:"status"`
	Flag        bool    `bson:"flag"`
	StartDate   *int64  `bson:"startDate"`
	EndDate     *int64  `bson:"endDate"`
	DueDate     *int64  `bson:"dueDate"`
	Order       int     `bson:"order"`
	CreatedAt   int64   `bson:"createdAt"`
	CreatedBy   string  `bson:"createdBy"`
	UpdatedAt   *int64  `bson:"updatedAt"`
	UpdatedBy   string  `bson:"updatedBy,omitempty"`
}

func toTaskDoc(t cases.Task) taskDoc {
	return taskDoc{ID: t.ID, Org: t.Org, CaseID: t.CaseID, Title: t.Title, Group: t.Group, Description: t.Description,
		Owner: nullString(t.Owner), Status: t.Status, Flag: t.Flag, StartDate: nullMillis(t.StartDate),
		EndDate: nullMillis(t.EndDate), DueDate: nullMillis(t.DueDate), Order: t.Order,
		CreatedAt: mongox.Millis(t.CreatedAt), CreatedBy: t.CreatedBy}
}

func (d taskDoc) task() cases.Task {
	return cases.Task{ID: d.ID, Org: d.Org, CaseID: d.CaseID, Title: d.Title, Group: d.Group, Description: d.Description,
		Owner: stringOf(d.Owner), Status: d.Status, Flag: d.Flag, StartDate: timeOf(d.StartDate),
		EndDate: timeOf(d.EndDate), DueDate: timeOf(d.DueDate), Order: d.Order,
		Meta: cases.Meta{CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
}

// CreateTasks inserts tasks in one call.
func (s *TaskStore) CreateTasks(ctx context.Context, ts []cases.Task) error {
	docs := make([]any, len(ts))
	for i, t := range ts {
		docs[i] = toTaskDoc(t)
	}
	if _, err := s.tasks.InsertMany(ctx, docs); err != nil {
		return fmt.Errorf("create tasks: %w", err)
	}
	return nil
}

// Task finds a task by id.
func (s *TaskStore) Task(ctx context.Context, id string) (cases.Task, error) {
	var d taskDoc
	if err := findOne(ctx, s.tasks, byID(id), &d, cases.ErrTaskNotFound); err != nil {
		return cases.Task{}, err
	}
	return d.task(), nil
}

// Tasks lists tasks.
func (s *TaskStore) Tasks(ctx context.Context, f search.Node, p search.Page) ([]cases.Task, int64, error) {
	var docs []taskDoc
	total, err := mongox.FindPage(ctx, s.tasks, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]cases.Task, len(docs))
	for i, d := range docs {
		out[i] = d.task()
	}
	return out, total, nil
}

func taskField(d taskDoc, name string) (bson.E, bool) {
	v, ok := map[string]any{
		"title": d.Title, "group": d.Group, "description": d.Description, "owner": d.Owner, "status": d.Status,
		"flag": d.Flag, "startDate": d.StartDate, "endDate": d.EndDate, "dueDate": d.DueDate, "order": d.Order,
	}[name]
	return bson.E{Key: name, Value: v}, ok
}

// UpdateTask writes the named fields of t.
func (s *TaskStore) UpdateTask(ctx context.Context, t cases.Task, fields []string, by string, at time.Time) (cases.Task, error) {
	d := toTaskDoc(t)
	set := stamp(by, at)
	seen := map[string]bool{}
	for _, f := range fields {
		e, ok := taskField(d, f)
		if !ok {
			return cases.Task{}, fmt.Errorf("update task: unknown field %q", f)
		}
		if !seen[f] {
			seen[f] = true
			set = append(set, e)
		}
	}
	var out taskDoc
	if err := findOneAndSet(ctx, s.tasks, byID(t.ID), set, &out, cases.ErrTaskNotFound); err != nil {
		return cases.Task{}, err
	}
	return out.task(), nil
}

// CloseCaseTasks cancels the Waiting tasks of a case and completes its InProgress ones.
func (s *TaskStore) CloseCaseTasks(ctx context.Context, caseID, by string, at time.Time) error {
	for from, to := range map[string]string{cases.TaskWaiting: cases.TaskCancel, cases.TaskInProgress: cases.TaskCompleted} {
		set := append(stamp(by, at), bson.E{Key: "status", Value: to}, bson.E{Key: "endDate", Value: mongox.Millis(at)})
		_, err := s.tasks.UpdateMany(ctx, bson.D{{Key: cases.PathCaseID, Value: caseID}, {Key: "status", Value: from}},
			bson.D{{Key: "$set", Value: set}})
		if err != nil {
			return fmt.Errorf("close tasks of case %s: %w", caseID, err)
		}
	}
	return nil
}

// DeleteCaseTasks removes the logs and then the tasks of a case.
func (s *TaskStore) DeleteCaseTasks(ctx context.Context, caseID string) error {
	if _, err := s.logs.DeleteMany(ctx, bson.D{{Key: cases.PathCaseID, Value: caseID}}); err != nil {
		return fmt.Errorf("delete logs of case %s: %w", caseID, err)
	}
	if _, err := s.tasks.DeleteMany(ctx, bson.D{{Key: cases.PathCaseID, Value: caseID}}); err != nil {
		return fmt.Errorf("delete tasks of case %s: %w", caseID, err)
	}
	return nil
}

// CountTasks counts the tasks of a case by status.
func (s *TaskStore) CountTasks(ctx context.Context, caseID string) (map[string]int64, error) {
	cur, err := s.tasks.Aggregate(ctx, bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: cases.PathCaseID, Value: caseID}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$status"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
	})
	if err != nil {
		return nil, fmt.Errorf("count tasks of case %s: %w", caseID, err)
	}
	var rows []bson.M
	if err := cur.All(ctx, &rows); err != nil {
		return nil, fmt.Errorf("count tasks of case %s: %w", caseID, err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		st, _ := r["_id"].(string)
		n, _ := toInt(r["n"])
		out[st] = n
	}
	return out, nil
}

type attachmentDoc struct {
	ID          string   `bson:"id"`
	Name        string   `bson:"name"`
	ContentType string   `bson:"contentType"`
	Size        int64    `bson:"size"`
	Hashes      []string `bson:"hashes"`
}

type logDoc struct {
	ID         string         `bson:"_id"`
	Org        string         `bson:"organisation"`
	CaseID     string         `bson:"case"`
	TaskID     string         `bson:"task"`
	Message    string         `bson:"message"`
	Date       int64          `bson:"date"`
	Attachment *attachmentDoc `bson:"attachment,omitempty"`
	CreatedAt  int64          `bson:"createdAt"`
	CreatedBy  string         `bson:"createdBy"`
	UpdatedAt  *int64         `bson:"updatedAt"`
	UpdatedBy  string         `bson:"updatedBy,omitempty"`
}

func (d logDoc) log() cases.Log {
	l := cases.Log{ID: d.ID, Org: d.Org, CaseID: d.CaseID, TaskID: d.TaskID, Message: d.Message, Date: mongox.Time(d.Date),
		Meta: cases.Meta{CreatedAt: mongox.Time(d.CreatedAt), CreatedBy: d.CreatedBy, UpdatedAt: timeOf(d.UpdatedAt),
			UpdatedBy: d.UpdatedBy}}
	if a := d.Attachment; a != nil {
		l.Attachment = &cases.Attachment{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Hashes: a.Hashes}
	}
	return l
}

// CreateLog inserts a log.
func (s *TaskStore) CreateLog(ctx context.Context, l cases.Log) error {
	d := logDoc{ID: l.ID, Org: l.Org, CaseID: l.CaseID, TaskID: l.TaskID, Message: l.Message, Date: mongox.Millis(l.Date),
		CreatedAt: mongox.Millis(l.CreatedAt), CreatedBy: l.CreatedBy}
	if a := l.Attachment; a != nil {
		d.Attachment = &attachmentDoc{ID: a.ID, Name: a.Name, ContentType: a.ContentType, Size: a.Size, Hashes: a.Hashes}
	}
	if _, err := s.logs.InsertOne(ctx, d); err != nil {
		return fmt.Errorf("create log: %w", err)
	}
	return nil
}

// Log finds a log by id.
func (s *TaskStore) Log(ctx context.Context, id string) (cases.Log, error) {
	var d logDoc
	if err := findOne(ctx, s.logs, byID(id), &d, cases.ErrLogNotFound); err != nil {
		return cases.Log{}, err
	}
	return d.log(), nil
}

// Logs lists logs.
func (s *TaskStore) Logs(ctx context.Context, f search.Node, p search.Page) ([]cases.Log, int64, error) {
	var docs []logDoc
	total, err := mongox.FindPage(ctx, s.logs, f, p, &docs)
	if err != nil {
		return nil, 0, err
	}
	out := make([]cases.Log, len(docs))
	for i, d := range docs {
		out[i] = d.log()
	}
	return out, total, nil
}

// LogWithAttachment finds a log of the organisation that holds the file.
func (s *TaskStore) LogWithAttachment(ctx context.Context, org, fileID string) (cases.Log, error) {
	var d logDoc
	err := findOne(ctx, s.logs, bson.D{{Key: cases.PathOrg, Value: org}, {Key: "attachment.id", Value: fileID}}, &d, cases.ErrLogNotFound)
	if err != nil {
		return cases.Log{}, err
	}
	return d.log(), nil
}
