// Package cases is the domain of case-svc: organisations, users and their profiles, cases, case templates,
// tasks and their logs, custom fields, observables of cases and alerts, alerts, similar cases and analyzer
// job records. It owns the types, the rules (who may do what in which organisation, defaults, validation,
// status transitions) and the interfaces of the stores it consumes.
package cases

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/ids"
)

// Meta is the bookkeeping every record carries.
type Meta struct {
	CreatedBy string
	CreatedAt time.Time
	UpdatedBy string    // "" until the record is changed
	UpdatedAt time.Time // zero until the record is changed
}

// Change is one field of an update: Set says the request changes it, Null that it clears it (for the fields
// that may be null), V is the new value otherwise.
type Change[T any] struct {
	Set  bool
	Null bool
	V    T
}

// value reports whether the change sets a (non-null) value.
func (c Change[T]) value() bool { return c.Set && !c.Null }

// newID returns a record id: "~" followed by a pkg/ids id (the creation time in milliseconds, this process's
// sequence, 32 random bits), so ids sort by creation and never collide.
func newID(now time.Time) string { return "~" + idgen.New(now) }

// idgen makes this process's record ids (pkg/ids: one sequence per process, so a case's 30000 tasks of one
// millisecond never collide).
var idgen ids.Generator

// ms is the millisecond precision of every stored time.
func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// problems collects field validation errors; err returns them as one AttributeCheckingError.
type problems []apperr.FieldError

func (p *problems) add(name, format string, args ...any) {
	*p = append(*p, apperr.FieldError{Name: name, Message: fmt.Sprintf(format, args...)})
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return apperr.Fields(p...)
}

// text checks a free-text field: at most max bytes of valid UTF-8, and non-blank when required.
func (p *problems) text(name, v string, required bool, max int) {
	switch {
	case required && strings.TrimSpace(v) == "":
		p.add(name, "required")
	case len(v) > max:
		p.add(name, "at most %d bytes", max)
	case !utf8.ValidString(v):
		p.add(name, "not valid UTF-8")
	}
}

// level checks a 0..3 (tlp, pap) or 1..4 (severity) scale.
func (p *problems) level(name string, v, lo, hi int) {
	if v < lo || v > hi {
		p.add(name, "an integer from %d to %d", lo, hi)
	}
}

// Limits on free text.
const (
	maxTitle       = 1024
	maxDescription = 1 << 20
	maxShort       = 256
	maxTags        = 256
)

// cleanTags trims the tags, drops empty ones and duplicates, and keeps the order.
func cleanTags(p *problems, name string, tags []string) []string {
	out := make([]string, 0, len(tags))
	seen := map[string]bool{}
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		if len(t) > maxShort || !utf8.ValidString(t) {
			p.add(name, "each tag is at most %d bytes of UTF-8", maxShort)
			return nil
		}
		seen[t] = true
		out = append(out, t)
	}
	if len(out) > maxTags {
		p.add(name, "at most %d tags", maxTags)
	}
	return out
}

// unionTags returns a followed by the tags of b that a lacks.
func unionTags(a, b []string) []string {
	out := append([]string{}, a...)
	for _, t := range b {
		found := false
		for _, x := range out {
			found = found || x == t
		}
		if !found {
			out = append(out, t)
		}
	}
	return out
}

// Errors shared by the services.
var (
	ErrCaseNotFound        = apperr.New(apperr.NotFound, "Case not found")
	ErrTaskNotFound        = apperr.New(apperr.NotFound, "Task not found")
	ErrLogNotFound         = apperr.New(apperr.NotFound, "Log not found")
	ErrTemplateNotFound    = apperr.New(apperr.NotFound, "CaseTemplate not found")
	ErrTemplateExists      = apperr.New(apperr.Conflict, "a case template with this name already exists")
	ErrCustomFieldNotFound = apperr.New(apperr.NotFound, "CustomField not found")
	ErrCustomFieldExists   = apperr.New(apperr.Conflict, "a custom field with this name already exists")
	ErrAttachmentNotFound  = apperr.New(apperr.NotFound, "Attachment not found")
)
