// Package tally counts case-svc's records of every kind in the database without reading them, within what a
// caller may list: the statistics of the _stats routes and the query API's count steps and aggregations. It
// owns the kinds of records it counts, the fields each is counted on, the caller's scope for each kind and the
// interface of the store it consumes.
package tally

import (
	"context"
	"errors"
	"fmt"

	"github.com/openir/platform/case-svc/internal/cases"
	"github.com/openir/platform/case-svc/internal/connector"
	"github.com/openir/platform/case-svc/internal/customfield"
	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/case-svc/internal/task"
	"github.com/openir/platform/case-svc/internal/template"
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
	RecordCase: cases.CaseFields, RecordAlert: cases.AlertFields, RecordTask: task.Fields, RecordLog: task.LogFields,
	RecordObservable: cases.ObservableFields, RecordTemplate: template.Fields, RecordCustomField: customfield.Fields,
	RecordUser: identity.UserFields, RecordOrg: identity.OrgFields, RecordJob: connector.JobFields,
}

// ValueCount is one group of a count by field: a value and how many records have it.
type ValueCount struct {
	Value any
	Count int64
}

// Store counts records in the database without reading them: all those matching f, or by the value of
// path (Groups: largest count first, at most limit groups, 0 = all; nil = the records without the path).
type Store interface {
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

// Counter counts the records a caller may list.
type Counter struct {
	store Store
}

// New returns the counter over the store (nil: every count fails).
func New(st Store) *Counter { return &Counter{store: st} }

// Count counts the records of kind r that the caller may list and that match f.
func (t *Counter) Count(ctx context.Context, c identity.Caller, r Record, f search.Node) (int64, error) {
	if t == nil || t.store == nil {
		return 0, errNoTally
	}
	if _, ok := RecordFields[r]; !ok {
		return 0, fmt.Errorf("count %q: unknown record", r)
	}
	return t.store.Count(ctx, r, record.And(f, scope(c, r)))
}

// Groups counts the records of kind r that the caller may list and that match f by the value of a field of
// RecordFields[r], largest count first; more than limit distinct values (limit > 0) is a 400, so that a
// grouping never returns an unbounded answer.
func (t *Counter) Groups(ctx context.Context, c identity.Caller, r Record, f search.Node, field string, limit int) ([]ValueCount, error) {
	if t == nil || t.store == nil {
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
	groups, err := t.store.Groups(ctx, r, record.And(f, scope(c, r)), fd.Path, n)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(groups) > limit {
		return nil, apperr.Errorf(apperr.BadRequest, "%s has more than %d distinct values here: narrow the query", field, limit)
	}
	return groups, nil
}
