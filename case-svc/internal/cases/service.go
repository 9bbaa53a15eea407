package cases

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
	"github.com/openir/platform/pkg/apperr"
)

// PathCaseID is the storage path of the case a record (a task, a log, an observable, an alert, a job)
// belongs to: the tasks' own.
const PathCaseID = task.PathCaseID

// Stores are what the case service consumes.
type Stores struct {
	Cases       CaseStore
	Tasks       task.Store
	Templates   template.Store
	Fields      customfield.Store
	Files       record.FileStore
	Members     identity.Members
	Observables ObservableStore
	Alerts      AlertStore
	// Archives unpacks uploaded archives (isZip), within its limits; nil refuses them (400).
	Archives Archives
}

// Archives unpacks the archive of an observable upload (isZip) into its files, which cleanup removes. A
// refused archive (malformed, a wrong password, over its limits) is a 400 apperr. The adapter is package
// archive (zip files, within observable.zip's limits).
type Archives interface {
	Unpack(ctx context.Context, body io.Reader, password string) (files []ArchivedFile, cleanup func(), err error)
}

// ArchivedFile is one file of an unpacked archive: its base name and its content.
type ArchivedFile struct {
	Name string
	Body io.Reader
}

// Service holds the rules of cases, observables and alerts. Every method takes the
// caller and works in its organisation: another organisation's records are not found (404).
type Service struct {
	cases       CaseStore
	tasks       task.Store
	templates   template.Store
	fields      customfield.Store
	files       record.FileStore
	members     identity.Members
	observables ObservableStore
	alerts      AlertStore
	archives    Archives
	now         func() time.Time
}

// NewService returns the case service.
func NewService(st Stores, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{cases: st.Cases, tasks: st.Tasks, templates: st.Templates, fields: st.Fields, files: st.Files,
		members: st.Members, observables: st.Observables, alerts: st.Alerts, archives: st.Archives, now: now}
}

func (s *Service) clock() time.Time { return record.Millis(s.now()) }

// checkOwner accepts an empty owner or the login of a user of the organisation.
func (s *Service) checkOwner(ctx context.Context, field, org, owner string) error {
	return identity.CheckOwner(ctx, s.members, field, org, owner)
}

// template returns a template of the caller's organisation by id or name.
func (s *Service) template(ctx context.Context, c identity.Caller, idOrName string) (template.Template, error) {
	return template.Find(ctx, s.templates, c.Org, idOrName)
}

// apperr404 reports whether err is a not-found error.
func apperr404(err error) bool { return err != nil && apperr.Is(err, apperr.NotFound) }

func trimRight(s string) string { return strings.TrimRight(s, " \t\r\n") }

// shortName cuts a client's string to 64 bytes for an error message.
func shortName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Attachment opens a file that a record (an observable or a log) of the caller's organisation holds.
func (s *Service) Attachment(ctx context.Context, c identity.Caller, id string) (io.ReadCloser, record.Attachment, error) {
	a, err := s.observables.HeldFile(ctx, c.Org, id)
	if apperr.Is(err, apperr.NotFound) {
		var l task.Log
		l, err = s.tasks.LogWithAttachment(ctx, c.Org, id)
		if apperr.Is(err, apperr.NotFound) {
			return nil, record.Attachment{}, record.ErrAttachmentNotFound
		}
		if err == nil {
			a = *l.Attachment
		}
	}
	if err != nil {
		return nil, record.Attachment{}, err
	}
	r, _, err := s.files.Open(ctx, id)
	if err != nil {
		return nil, record.Attachment{}, err
	}
	return r, a, nil
}
