package cases

import (
	"context"
	"errors"
	"fmt"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/search"
)

// Record names a kind of record that the statistics count: the _stats routes and the query API's count
// steps and aggregations.
type Record string

// The records that can be counted.
const (
	RecordCase        Record = "case"
	RecordAlert       Record = "alert"
	RecordTask        Record = "task"
	RecordLog         Record = "log"
	RecordObservable  Record = "observable"
	RecordTemplate    Record = "caseTemplate"
	RecordCustomField Record = "customField"
	RecordUser        Record = "user"
	RecordOrg         Record = "organisation"
	RecordJob         Record = "job"
)

// RecordFields are the allow-lists of the fields each record is filtered and grouped on.
var RecordFields = map[Record]search.Fields{
	RecordCase: CaseFields, RecordAlert: AlertFields, RecordTask: TaskFields, RecordLog: LogFields,
	RecordObservable: ObservableFields, RecordTemplate: TemplateFields, RecordCustomField: CustomFieldFields,
	RecordUser: identity.UserFields, RecordOrg: identity.OrgFields, RecordJob: JobFields,
}

// TallyStore counts records in the database without reading them: all those matching f, or by the value of
// path (Groups: largest count first, at most limit groups, 0 = all; nil = the records without the path).
type TallyStore interface {
	Count(ctx context.Context, r Record, f search.Node) (int64, error)
	Groups(ctx context.Context, r Record, f search.Node, path string, limit int) ([]ValueCount, error)
}

var errNoTally = errors.New("no tally store")

// scope is the filter that keeps a count within what the caller may list: its organisation's records, the
// shared custom field definitions, the users of its organisation and its own organisations (all of them for a
// platform administrator, as identity.Service.Users and Orgs list them).
func scope(c identity.Caller, r Record) search.Node {
	switch r {
	case RecordCustomField:
		return search.Node{Op: search.OpAll}
	case RecordUser:
		if c.PlatformAdmin() {
			return search.Node{Op: search.OpAll}
		}
		return search.Node{Op: search.OpEq, Path: identity.PathUserOrgs, Value: c.Org}
	case RecordOrg:
		if c.PlatformAdmin() {
			return search.Node{Op: search.OpAll}
		}
		vals := make([]any, len(c.Orgs))
		for i, o := range c.Orgs {
			vals[i] = o
		}
		return search.Node{Op: search.OpIn, Path: "_id", Values: vals}
	}
	return record.InOrg(c.Org)
}

// Count counts the records of kind r that the caller may list and that match f.
func (s *Service) Count(ctx context.Context, c identity.Caller, r Record, f search.Node) (int64, error) {
	if s.tally == nil {
		return 0, errNoTally
	}
	if _, ok := RecordFields[r]; !ok {
		return 0, fmt.Errorf("count %q: unknown record", r)
	}
	return s.tally.Count(ctx, r, record.And(f, scope(c, r)))
}

// Groups counts the records of kind r that the caller may list and that match f by the value of a field of
// RecordFields[r], largest count first; more than limit distinct values (limit > 0) is a 400, so that a
// grouping never returns an unbounded answer.
func (s *Service) Groups(ctx context.Context, c identity.Caller, r Record, f search.Node, field string, limit int) ([]ValueCount, error) {
	if s.tally == nil {
		return nil, errNoTally
	}
	fields, ok := RecordFields[r]
	if !ok {
		return nil, fmt.Errorf("group %q: unknown record", r)
	}
	fd, ok := fields[field]
	if !ok {
		return nil, apperr.Fields(apperr.FieldError{Name: "_field", Message: fmt.Sprintf("unknown field %q", field)})
	}
	n := 0
	if limit > 0 {
		n = limit + 1
	}
	groups, err := s.tally.Groups(ctx, r, record.And(f, scope(c, r)), fd.Path, n)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(groups) > limit {
		return nil, apperr.Errorf(apperr.BadRequest, "%s has more than %d distinct values here: narrow the query", field, limit)
	}
	return groups, nil
}
