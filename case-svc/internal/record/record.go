// Package record owns what every case-svc record has in common, whichever package owns the record: its
// bookkeeping (Meta), its id (NewID), the millisecond precision of its times (Millis), its owning organisation
// (PathOrg, InOrg), the change of one field in an update (Change), field validation (Problems, FieldError,
// the limits on free text and tags), the conjunction of a search with its scope (And) and the files records
// hold (Attachment, Upload, File, FileStore). It holds no rule of any one record.
package record

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/ids"
	"github.com/openir/platform/pkg/search"
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

// Value reports whether the change sets a (non-null) value.
func (c Change[T]) Value() bool { return c.Set && !c.Null }

// NewID returns a record id: "~" followed by a pkg/ids id (the creation time in milliseconds, this process's
// sequence, 32 random bits), so ids sort by creation and never collide.
func NewID(now time.Time) string { return "~" + idgen.New(now) }

// idgen makes this process's record ids (pkg/ids: one sequence per process, so a case's 30000 tasks of one
// millisecond never collide).
var idgen ids.Generator

// Millis is the millisecond precision of every stored time.
func Millis(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// PathOrg is the storage path of the owning organisation of org-scoped records.
const PathOrg = "organisation"

// InOrg restricts a search to the records an organisation owns.
func InOrg(org string) search.Node {
	return search.Node{Op: search.OpEq, Path: PathOrg, Value: org}
}

// And returns the conjunction of a filter and a scope.
func And(f, scope search.Node) search.Node {
	if f.Op == "" { // the zero node (no filter given) would match nothing
		return scope
	}
	return search.Node{Op: search.OpAnd, Children: []search.Node{f, scope}}
}

// Problems collects field validation errors; Err returns them as one AttributeCheckingError.
type Problems []apperr.FieldError

// Add records a problem of the named field.
func (p *Problems) Add(name, format string, args ...any) {
	*p = append(*p, apperr.FieldError{Name: name, Message: fmt.Sprintf(format, args...)})
}

// Err returns the problems as one error, nil when there is none.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return apperr.Fields(p...)
}

// Text checks a free-text field: at most max bytes of valid UTF-8, and non-blank when required.
func (p *Problems) Text(name, v string, required bool, max int) {
	switch {
	case required && strings.TrimSpace(v) == "":
		p.Add(name, "required")
	case len(v) > max:
		p.Add(name, "at most %d bytes", max)
	case !utf8.ValidString(v):
		p.Add(name, "not valid UTF-8")
	}
}

// Level checks a 0..3 (tlp, pap) or 1..4 (severity) scale.
func (p *Problems) Level(name string, v, lo, hi int) {
	if v < lo || v > hi {
		p.Add(name, "an integer from %d to %d", lo, hi)
	}
}

// ChangeText applies an update's change of a free-text field to *dst: a field the request sets is checked as
// Text does (a null is refused when required) and, when it passes, stored and its name appended to changed.
func (p *Problems) ChangeText(changed *[]string, name string, ch Change[string], dst *string, required bool, max int) {
	if !ch.Set {
		return
	}
	if ch.Null && required {
		p.Add(name, "required")
		return
	}
	p.Text(name, ch.V, required, max)
	*dst = ch.V
	*changed = append(*changed, name)
}

// ChangeLevel applies an update's change of a scale (Level; a null is refused) to *dst, appending its name
// to changed.
func (p *Problems) ChangeLevel(changed *[]string, name string, ch Change[int], dst *int, lo, hi int) {
	if !ch.Set {
		return
	}
	if ch.Null {
		p.Add(name, "an integer from %d to %d", lo, hi)
		return
	}
	p.Level(name, ch.V, lo, hi)
	*dst = ch.V
	*changed = append(*changed, name)
}

// ChangeFlag applies an update's change of a boolean (ioc, sighted, ignoreSimilarity, follow, flag) to *dst,
// appending its name to changed (when changed is not nil). A null is refused ("expected a boolean") on every
// record alike: the contract's flags are booleans, never null, and turning a null into false would change a
// record the client did not mean to change.
func (p *Problems) ChangeFlag(changed *[]string, name string, ch Change[bool], dst *bool) {
	if !ch.Set {
		return
	}
	if ch.Null {
		p.Add(name, "expected a boolean")
		return
	}
	*dst = ch.V
	if changed != nil {
		*changed = append(*changed, name)
	}
}

// ChangeInt applies an update's change of an unbounded integer (a task's order; a null is refused) to *dst,
// appending its name to changed.
func (p *Problems) ChangeInt(changed *[]string, name string, ch Change[int], dst *int) {
	if !ch.Set {
		return
	}
	if ch.Null {
		p.Add(name, "expected an integer")
		return
	}
	*dst = ch.V
	*changed = append(*changed, name)
}

// FieldError is the AttributeCheckingError of one field.
func FieldError(name, msg string) error {
	return apperr.Fields(apperr.FieldError{Name: name, Message: msg})
}

// Limits on free text.
const (
	MaxTitle       = 1024
	MaxDescription = 1 << 20
	MaxShort       = 256
	MaxTags        = 256
)

// CleanTags trims the tags, drops empty ones and duplicates, and keeps the order.
func CleanTags(p *Problems, name string, tags []string) []string {
	out := make([]string, 0, len(tags))
	seen := map[string]bool{}
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		if len(t) > MaxShort || !utf8.ValidString(t) {
			p.Add(name, "each tag is at most %d bytes of UTF-8", MaxShort)
			return nil
		}
		seen[t] = true
		out = append(out, t)
	}
	if len(out) > MaxTags {
		p.Add(name, "at most %d tags", MaxTags)
	}
	return out
}

// UnionTags returns a followed by the tags of b that a lacks.
func UnionTags(a, b []string) []string {
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
