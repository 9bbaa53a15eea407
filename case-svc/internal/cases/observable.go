package cases

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/fname"
	"github.com/openir/platform/pkg/search"
)

// DataTypeFile is the observable type whose value is a file (an attachment) rather than a string.
const DataTypeFile = "file"

// ObservableTypes lists the registered observable types: the reference system's defaults plus username,
// which the contract names. Only DataTypeFile takes an attachment.
func ObservableTypes() []string {
	return []string{"autonomous-system", "domain", "file", "filename", "fqdn", "hash", "hostname", "ip", "mail",
		"mail-subject", "other", "regexp", "registry", "uri_path", "url", "user-agent", "username"}
}

// Observable is a piece of data (a string, or a file) attached to one case or one alert. It is unique in its
// parent by (DataType, Data) — by (DataType, file content) for files — and its id is derived from that key,
// so a duplicate insert fails on the _id alone.
type Observable struct {
	ID               string
	Org              string
	CaseID           string // the parent case, or ""
	AlertID          string // the parent alert, or ""
	DataType         string
	Data             string             // "" for files
	Attachment       *record.Attachment // files only
	Key              string             // what similarity compares: "d:"+sha256(data) or "a:"+file sha256
	StartDate        time.Time
	TLP              int
	Tags             []string
	IOC              bool
	Sighted          bool
	IgnoreSimilarity bool
	Message          string
	// Reports holds, per analyzer name, the summary of its last report (filled by the connector).
	Reports map[string]any
	record.Meta
}

// Parent names the record an observable belongs to: exactly one of Case and Alert.
type Parent struct {
	Case  string
	Alert string
}

// dataKey is the similarity and uniqueness key of a text value.
func dataKey(data string) string {
	sum := sha256.Sum256([]byte(data))
	return "d:" + hex.EncodeToString(sum[:])
}

// fileKey is the similarity and uniqueness key of a file.
func fileKey(sha256hex string) string { return "a:" + sha256hex }

// observableID derives an observable's id from its parent and its unique key: the same value twice in one
// parent gives the same id, so the second insert fails fast on the _id index.
func observableID(p Parent, dataType, key string) string {
	parent := "case:" + p.Case
	if p.Alert != "" {
		parent = "alert:" + p.Alert
	}
	sum := sha256.Sum256([]byte(parent + "\x00" + dataType + "\x00" + key))
	return "~" + hex.EncodeToString(sum[:16])
}

// NewObservable is a request to add observables to a case or an alert: one observable per value of Data, or
// one for File, or one per file inside File when IsZip is set.
type NewObservable struct {
	DataType         string
	Data             []string
	File             *record.Upload
	IsZip            bool
	ZipPassword      string
	Message          string
	StartDate        *time.Time
	TLP              *int
	Tags             []string
	IOC              bool
	Sighted          bool
	IgnoreSimilarity bool
}

// ObservableUpdate holds the changes to an observable. Its type and data never change: DataType and Data
// are accepted only with the observable's current values (clients send back what they read).
type ObservableUpdate struct {
	DataType         record.Change[string]
	Data             record.Change[string]
	IOC              record.Change[bool]
	Sighted          record.Change[bool]
	IgnoreSimilarity record.Change[bool]
	Tags             record.Change[[]string]
	Message          record.Change[string]
	TLP              record.Change[int]
}

// ObservableFailure is an observable of a batch that could not be created, with the reason.
type ObservableFailure struct {
	Observable Observable
	Err        error
}

// ObservableCount is how many observables (and IOCs among them) a case has, ignoreSimilarity ones excluded.
type ObservableCount struct {
	Observables int
	IOCs        int
}

// ObservableStore persists observables of cases and alerts.
type ObservableStore interface {
	// CreateObservable inserts an observable; it fails with ErrObservableExists when its id (derived from the
	// parent and the value) is taken. A file observable also records that its organisation holds the file.
	CreateObservable(ctx context.Context, o Observable) error
	// CreateObservables inserts observables in one call and returns one result per observable, in order: nil
	// when it was stored, ErrObservableExists when its id is taken (by a stored observable or an earlier one
	// of os). The error is for a failure of the whole call. File observables also record their grants.
	CreateObservables(ctx context.Context, os []Observable) ([]error, error)
	// Observable fails with ErrObservableNotFound.
	Observable(ctx context.Context, id string) (Observable, error)
	Observables(ctx context.Context, f search.Node, p search.Page) ([]Observable, int64, error)
	// UpdateObservable writes the named fields (ObservableUpdate's names: ioc, tags…) of o.
	UpdateObservable(ctx context.Context, o Observable, fields []string, by string, at time.Time) (Observable, error)
	// AddObservableTags adds tags an observable lacks.
	AddObservableTags(ctx context.Context, id string, tags []string, by string, at time.Time) error
	// MergeReport sets the summary of one analyzer's report in the observable's reports.
	MergeReport(ctx context.Context, id, analyzer string, summary any) error
	DeleteObservable(ctx context.Context, id string) error
	// DeleteParentObservables removes every observable of a case or an alert.
	DeleteParentObservables(ctx context.Context, p Parent) error
	// CountCaseObservables counts the observables of a case.
	CountCaseObservables(ctx context.Context, caseID string) (int64, error)
	// SimilarObservables returns the case observables of the organisation whose Key is among keys, except
	// ignoreSimilarity ones, at most limit of them (0 = all).
	SimilarObservables(ctx context.Context, org string, keys []string, limit int) ([]Observable, error)
	// CountSimilar counts what SimilarObservables would return, except the observable except (""), without
	// reading the observables.
	CountSimilar(ctx context.Context, org string, keys []string, except string) (int64, error)
	// CaseObservableCounts counts, per case, its observables and IOCs, except ignoreSimilarity ones.
	CaseObservableCounts(ctx context.Context, caseIDs []string) (map[string]ObservableCount, error)
	// HeldFile returns the attachment of a file that an observable of the organisation has (or had); it fails
	// with record.ErrAttachmentNotFound.
	HeldFile(ctx context.Context, org, fileID string) (record.Attachment, error)
}

// Errors of observables.
var (
	ErrObservableNotFound = apperr.New(apperr.NotFound, "Observable not found")
	ErrObservableExists   = apperr.New(apperr.Conflict, "Observable already exists")
)

// Storage paths of an observable's parents.
const (
	PathAlertID = "alert"
)

// ObservableFields is the allow-list of observable searches.
var ObservableFields = search.Fields{
	"_id": {Path: "_id"}, "id": {Path: "_id"}, "dataType": {Path: "dataType"}, "data": {Path: "data"},
	"message": {Path: "message"}, "tlp": {Path: "tlp", Type: search.Number}, "ioc": {Path: "ioc", Type: search.Bool},
	"sighted": {Path: "sighted", Type: search.Bool}, "ignoreSimilarity": {Path: "ignoreSimilarity", Type: search.Bool},
	"tags": {Path: "tags"}, "startDate": {Path: "startDate", Type: search.Number},
	"case": {Path: PathCaseID}, "alert": {Path: PathAlertID},
	"attachment.id": {Path: "attachment.id"}, "attachment.name": {Path: "attachment.name"},
	"attachment.hashes": {Path: "attachment.hashes"}, "attachment.contentType": {Path: "attachment.contentType"},
	"attachment.size": {Path: "attachment.size", Type: search.Number},
	"createdAt":       {Path: "createdAt", Type: search.Number}, "createdBy": {Path: "createdBy"},
	"updatedAt": {Path: "updatedAt", Type: search.Number}, "updatedBy": {Path: "updatedBy"},
	"_createdAt": {Path: "createdAt", Type: search.Number}, "_createdBy": {Path: "createdBy"},
	"_updatedAt": {Path: "updatedAt", Type: search.Number}, "_updatedBy": {Path: "updatedBy"},
}

// Limits of observable requests.
const (
	maxData        = 1 << 20 // bytes of one value
	maxBatchValues = 10000   // values of one request
)

// pending is an observable being created, with the file content it still has to store (nil when stored, or
// for text).
type pending struct {
	o       Observable
	content []byte
}

// CreateObservables adds observables to a case or an alert of the caller's organisation
// (manageObservable). Invalid input refuses the whole request; a value the parent already has is reported
// in the failures while the others are created.
func (s *Service) CreateObservables(ctx context.Context, c identity.Caller, p Parent, n NewObservable) ([]Observable, []ObservableFailure, error) {
	if err := c.Require(identity.ManageObservable); err != nil {
		return nil, nil, err
	}
	parent, err := s.parent(ctx, c, p)
	if err != nil {
		return nil, nil, err
	}
	var pr record.Problems
	now := s.clock()
	base := checkNewObservable(&pr, "", n, now)
	if n.File != nil {
		if n.DataType != DataTypeFile && base.DataType != "" {
			pr.Add("attachment", "a text observable doesn't accept attachment")
		}
		if len(n.Data) > 0 {
			pr.Add("data", "give either data or attachment")
		}
		pr.Text("attachment", n.File.Name, false, record.MaxShort)
		pr.Text("attachment", n.File.ContentType, false, record.MaxShort)
	}
	var items []pending
	if n.File == nil {
		items = s.dataValues(&pr, "", base, n.Data)
	}
	if err := pr.Err(); err != nil {
		return nil, nil, err
	}
	if n.File != nil {
		uploads := []record.Upload{*n.File}
		if n.IsZip {
			if s.archives == nil {
				return nil, nil, apperr.New(apperr.BadRequest, "attachment: archives are not accepted here")
			}
			files, cleanup, err := s.archives.Unpack(ctx, n.File.Body, n.ZipPassword)
			if err != nil {
				return nil, nil, err
			}
			defer cleanup()
			uploads = nil
			for _, f := range files {
				uploads = append(uploads, record.Upload{Name: f.Name, ContentType: "application/octet-stream", Body: f.Body})
			}
		}
		for _, up := range uploads {
			o, err := s.storeFile(ctx, base, up)
			if err != nil {
				return nil, nil, err
			}
			items = append(items, pending{o: o})
		}
	}
	return s.insertObservables(ctx, c, parent, items, now, true)
}

// parent checks that the case or alert exists in the caller's organisation and returns its canonical ids.
func (s *Service) parent(ctx context.Context, c identity.Caller, p Parent) (Parent, error) {
	if p.Alert != "" {
		a, err := s.Alert(ctx, c, p.Alert)
		if err != nil {
			return Parent{}, err
		}
		return Parent{Alert: a.ID}, nil
	}
	cs, err := s.Case(ctx, c, p.Case)
	if err != nil {
		return Parent{}, err
	}
	return Parent{Case: cs.ID}, nil
}

// checkNewObservable validates the attributes shared by the values of a request and returns them as an
// observable template (no parent, data or id yet).
func checkNewObservable(p *record.Problems, prefix string, n NewObservable, now time.Time) Observable {
	if prefix != "" {
		prefix += "."
	}
	o := Observable{DataType: n.DataType, StartDate: now, TLP: DefaultTLP, Message: n.Message, IOC: n.IOC,
		Sighted: n.Sighted, IgnoreSimilarity: n.IgnoreSimilarity, Reports: map[string]any{}}
	switch {
	case strings.TrimSpace(n.DataType) == "":
		p.Add(prefix+"dataType", "required")
	case !slices.Contains(ObservableTypes(), n.DataType):
		p.Add(prefix+"dataType", "not a registered observable type (one of %s)", strings.Join(ObservableTypes(), ", "))
		o.DataType = ""
	}
	p.Text(prefix+"message", n.Message, false, record.MaxDescription)
	if n.TLP != nil {
		p.Level(prefix+"tlp", *n.TLP, 0, 3)
		o.TLP = *n.TLP
	}
	if n.StartDate != nil {
		o.StartDate = record.Millis(*n.StartDate)
	}
	o.Tags = record.CleanTags(p, prefix+"tags", n.Tags)
	return o
}

// dataValues turns the values of a request into observables: one per non-blank value. A file observable
// given as data uses the reference system's inline form "name;contentType;base64".
func (s *Service) dataValues(p *record.Problems, prefix string, base Observable, values []string) []pending {
	if prefix != "" {
		prefix += "."
	}
	var out []pending
	for _, v := range values {
		if strings.TrimSpace(v) == "" {
			continue
		}
		if len(v) > maxData || !utf8.ValidString(v) {
			p.Add(prefix+"data", "each value is at most %d bytes of UTF-8", maxData)
			return nil
		}
		o := base
		o.Tags = slices.Clone(base.Tags)
		if base.DataType == DataTypeFile {
			name, ct, content, ok := inlineFile(v)
			if !ok {
				p.Add(prefix+"data", `a file observable takes an attachment, or data written "name;contentType;base64"`)
				return nil
			}
			sum := sha256.Sum256(content)
			o.Attachment = &record.Attachment{ID: hex.EncodeToString(sum[:]), Name: fname.Base(name, hex.EncodeToString(sum[:])),
				ContentType: ct, Size: int64(len(content))}
			o.Key = fileKey(o.Attachment.ID)
			out = append(out, pending{o: o, content: content})
			continue
		}
		o.Data, o.Key = v, dataKey(v)
		out = append(out, pending{o: o})
	}
	if len(out) == 0 && base.DataType != "" {
		p.Add(prefix+"data", "required: give data (one or more values) or attachment")
	}
	if len(out) > maxBatchValues {
		p.Add(prefix+"data", "at most %d values", maxBatchValues)
	}
	return out
}

// inlineFile parses "name;contentType;base64".
func inlineFile(v string) (name, contentType string, content []byte, ok bool) {
	parts := strings.SplitN(v, ";", 3)
	if len(parts) != 3 || strings.TrimSpace(parts[0]) == "" || len(parts[0]) > record.MaxShort || len(parts[1]) > record.MaxShort {
		return "", "", nil, false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(parts[2]))
	if err != nil {
		return "", "", nil, false
	}
	return parts[0], parts[1], b, true
}

// storeFile puts an uploaded file in the attachment store and returns the observable describing it.
func (s *Service) storeFile(ctx context.Context, base Observable, up record.Upload) (Observable, error) {
	f, err := s.files.Put(ctx, up.Body)
	if err != nil {
		return Observable{}, err
	}
	name, ct := up.Name, up.ContentType
	if name == "" {
		name = f.ID
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	o := base
	o.Tags = slices.Clone(base.Tags)
	o.Attachment = &record.Attachment{ID: f.ID, Name: name, ContentType: ct, Size: f.Size, Hashes: []string{f.SHA256, f.SHA1, f.MD5}}
	o.Key = fileKey(f.ID)
	return o, nil
}

// insertObservables stores pending observables in a parent, in one store call: duplicates become failures,
// other errors end the request. With list set, an alert's list of observables is extended with those created.
func (s *Service) insertObservables(ctx context.Context, c identity.Caller, parent Parent, items []pending, now time.Time, list bool) ([]Observable, []ObservableFailure, error) {
	batch := make([]Observable, len(items))
	for i, it := range items {
		o := it.o
		o.Org, o.CaseID, o.AlertID = c.Org, parent.Case, parent.Alert
		o.ID = observableID(parent, o.DataType, o.Key)
		o.Meta = record.Meta{CreatedAt: now, CreatedBy: c.Login}
		if it.content != nil {
			f, err := s.files.Put(ctx, bytes.NewReader(it.content))
			if err != nil {
				return nil, nil, err
			}
			o.Attachment.Hashes = []string{f.SHA256, f.SHA1, f.MD5}
		}
		batch[i] = o
	}
	res, err := s.observables.CreateObservables(ctx, batch)
	if err != nil {
		return nil, nil, err
	}
	var created []Observable
	var failed []ObservableFailure
	for i, o := range batch {
		switch {
		case res[i] == nil:
			created = append(created, o)
		case errors.Is(res[i], ErrObservableExists):
			failed = append(failed, ObservableFailure{Observable: o, Err: ErrObservableExists})
		default:
			return nil, nil, res[i]
		}
	}
	if list && parent.Alert != "" && len(created) > 0 {
		ids := make([]string, len(created))
		for i, o := range created {
			ids[i] = o.ID
		}
		if err := s.alerts.AddAlertObservables(ctx, parent.Alert, ids); err != nil {
			return nil, nil, err
		}
	}
	return created, failed, nil
}

// Observable returns an observable of the caller's organisation.
func (s *Service) Observable(ctx context.Context, c identity.Caller, id string) (Observable, error) {
	o, err := s.observables.Observable(ctx, id)
	if err != nil {
		return Observable{}, err
	}
	if o.Org != c.Org {
		return Observable{}, ErrObservableNotFound
	}
	return o, nil
}

// Observables lists and searches the observables of the caller's organisation, or of one of its cases or
// alerts when p names one.
func (s *Service) Observables(ctx context.Context, c identity.Caller, p Parent, f search.Node, pg search.Page) ([]Observable, int64, error) {
	scope := record.InOrg(c.Org)
	if p.Case != "" || p.Alert != "" {
		parent, err := s.parent(ctx, c, p)
		if err != nil {
			return nil, 0, err
		}
		path, id := PathCaseID, parent.Case
		if parent.Alert != "" {
			path, id = PathAlertID, parent.Alert
		}
		scope = record.And(scope, search.Node{Op: search.OpEq, Path: path, Value: id})
	}
	return s.observables.Observables(ctx, record.And(f, scope), pg)
}

// UpdateObservable changes the flags, tags, message or tlp of an observable (manageObservable).
func (s *Service) UpdateObservable(ctx context.Context, c identity.Caller, id string, u ObservableUpdate) (Observable, error) {
	if err := c.Require(identity.ManageObservable); err != nil {
		return Observable{}, err
	}
	o, err := s.Observable(ctx, c, id)
	if err != nil {
		return Observable{}, err
	}
	var p record.Problems
	var fields []string
	if u.DataType.Set && u.DataType.V != o.DataType {
		p.Add("dataType", "cannot be changed")
	}
	if u.Data.Set && u.Data.V != o.Data {
		p.Add("data", "cannot be changed")
	}
	p.ChangeFlag(&fields, "ioc", u.IOC, &o.IOC)
	p.ChangeFlag(&fields, "sighted", u.Sighted, &o.Sighted)
	p.ChangeFlag(&fields, "ignoreSimilarity", u.IgnoreSimilarity, &o.IgnoreSimilarity)
	if u.Tags.Set {
		o.Tags = record.CleanTags(&p, "tags", u.Tags.V)
		fields = append(fields, "tags")
	}
	if u.Message.Set {
		p.Text("message", u.Message.V, false, record.MaxDescription)
		o.Message = u.Message.V
		fields = append(fields, "message")
	}
	if u.TLP.Set {
		if u.TLP.Null {
			p.Add("tlp", "an integer from 0 to 3")
		}
		p.Level("tlp", u.TLP.V, 0, 3)
		o.TLP = u.TLP.V
		fields = append(fields, "tlp")
	}
	if err := p.Err(); err != nil {
		return Observable{}, err
	}
	if len(fields) == 0 {
		return o, nil
	}
	return s.observables.UpdateObservable(ctx, o, fields, c.Login, s.clock())
}

// DeleteObservable removes an observable (manageObservable). An alert's list loses it first, so an
// interrupted delete leaves it visible and deletable again.
func (s *Service) DeleteObservable(ctx context.Context, c identity.Caller, id string) error {
	if err := c.Require(identity.ManageObservable); err != nil {
		return err
	}
	o, err := s.Observable(ctx, c, id)
	if err != nil {
		return err
	}
	if o.AlertID != "" {
		if err := s.alerts.RemoveAlertObservable(ctx, o.AlertID, o.ID); err != nil {
			return err
		}
	}
	return s.observables.DeleteObservable(ctx, o.ID)
}

// copyObservables copies observables into a case (an alert's, when it becomes or joins a case), in one store
// call. A value the case already has keeps its observable, which gains the copy's tags.
func (s *Service) copyObservables(ctx context.Context, c identity.Caller, caseID string, from []Observable) error {
	now := s.clock()
	batch := make([]Observable, len(from))
	for i, src := range from {
		o := src
		o.CaseID, o.AlertID, o.Org = caseID, "", c.Org
		o.ID = observableID(Parent{Case: caseID}, o.DataType, o.Key)
		o.Reports = map[string]any{}
		o.Meta = record.Meta{CreatedAt: now, CreatedBy: c.Login}
		batch[i] = o
	}
	res, err := s.observables.CreateObservables(ctx, batch)
	if err != nil {
		return fmt.Errorf("copy observables into case %s: %w", caseID, err)
	}
	for i, o := range batch {
		err := res[i]
		if errors.Is(err, ErrObservableExists) {
			if len(o.Tags) > 0 {
				err = s.observables.AddObservableTags(ctx, o.ID, o.Tags, c.Login, now)
			} else {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("copy observable %s into case %s: %w", from[i].ID, caseID, err)
		}
	}
	return nil
}

// Seen counts the other observables of cases of the caller's organisation with the same value (the
// reference system's "seen"); ignoreSimilarity ones are not counted.
// It is an index count (issue 15: reading every similar observable, for each observable of a page, made a page
// of a common value's observables quadratic).
func (s *Service) Seen(ctx context.Context, c identity.Caller, o Observable) (int, error) {
	n, err := s.observables.CountSimilar(ctx, c.Org, []string{o.Key}, o.ID)
	return int(n), err
}
