package cases

import (
	"context"
	"strings"
	"time"

	"github.com/openir/platform/case-svc/internal/archive"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
)

// Members answers whether a login is a user of an organisation; *identity.Service implements it.
type Members interface {
	Member(ctx context.Context, login, org string) (bool, error)
}

// Stores are what the case service consumes.
type Stores struct {
	Cases       CaseStore
	Tasks       TaskStore
	Templates   TemplateStore
	Fields      customfield.Store
	Files       FileStore
	Members     Members
	Observables ObservableStore
	Alerts      AlertStore
	// Zip bounds unpacked archives; zero = archive.DefaultLimits.
	Zip archive.Limits
}

// Service holds the rules of cases, case templates, tasks, logs and custom fields. Every method takes the
// caller and works in its organisation: another organisation's records are not found (404).
type Service struct {
	cases       CaseStore
	tasks       TaskStore
	templates   TemplateStore
	fields      customfield.Store
	files       FileStore
	members     Members
	observables ObservableStore
	alerts      AlertStore
	zip         archive.Limits
	now         func() time.Time
}

// NewService returns the case service.
func NewService(st Stores, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	if st.Zip == (archive.Limits{}) {
		st.Zip = archive.DefaultLimits
	}
	return &Service{cases: st.Cases, tasks: st.Tasks, templates: st.Templates, fields: st.Fields, files: st.Files,
		members: st.Members, observables: st.Observables, alerts: st.Alerts, zip: st.Zip, now: now}
}

func (s *Service) clock() time.Time { return record.Millis(s.now()) }

// checkOwner accepts an empty owner or the login of a user of the organisation.
func (s *Service) checkOwner(ctx context.Context, field, org, owner string) error {
	if owner == "" {
		return nil
	}
	ok, err := s.members.Member(ctx, owner, org)
	if err != nil {
		return err
	}
	if !ok {
		return record.FieldError(field, "no such user in the organisation")
	}
	return nil
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
