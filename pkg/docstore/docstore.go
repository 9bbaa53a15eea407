// Package docstore is the one document-collection API every store of both services is written against. It
// owns the collections, the filter builders over the neutral filter tree of pkg/search, updates, the declared
// indexes, the errors, the content-addressed attachment store, and Open, which picks the engine from the URI:
// MongoDB (pkg/docstore/mongo: mongo-driver v2; production, a replica set shared by a service's replicas) or
// SQLite (pkg/docstore/sqlite: modernc.org/sqlite, pure Go; the embedded single-node default). Each engine owns
// the translation of filters and updates into its own query language; the contract between this package and
// them is pkg/docstore/internal/engine, whose declarations this package re-exports (Spec, Index, Key, Query,
// Group, FindAndUpdate, Raw, Config). No store imports an engine: stores see only this package's types.
//
// Documents are Go values that encode to a JSON object (struct fields with `json` tags) holding a string
// "_id". They cross the engine boundary as JSON, so both engines store and return exactly what encoding/json
// writes: numbers without a fraction or exponent are integers (64-bit, or larger ones kept as written),
// others are doubles; the order of keys is kept, through updates too; keys must not contain "." or start with
// "$" (stores keep client-chosen keys as JSON text in a string field). Arrays may only be stored at the paths a
// collection declares (Spec.Arrays); see check.go for the checks both engines get.
//
// Semantics follow MongoDB's and are pinned by the conformance suite (conformance_test.go), run on both
// engines: a value matches an array that contains it (for the fields a collection declares as arrays),
// a missing field and null are equal for equality and existence, numbers compare as numbers and never equal a
// string, and sorting puts null/missing first, then numbers, then strings.
package docstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"

	"github.com/openir/platform/pkg/apperr"
	"github.com/openir/platform/pkg/docstore/internal/engine"
	"github.com/openir/platform/pkg/docstore/mongo"
	"github.com/openir/platform/pkg/docstore/sqlite"
	"github.com/openir/platform/pkg/search"
)

// ErrNotFound is returned by Get, FindOne, FindOneAndUpdate and Replace when no document matches.
var ErrNotFound = engine.ErrNotFound

// ErrDuplicate is returned (wrapped) when a write would break a unique index or reuse an _id.
var ErrDuplicate = engine.ErrDuplicate

// IsDuplicate reports whether err is a unique-key violation.
func IsDuplicate(err error) bool { return errors.Is(err, ErrDuplicate) }

// Config says where the database is: URI (mongodb:// or mongodb+srv://; empty selects SQLite), Name (the
// MongoDB database, or the SQLite file Path/Name.db), Path, OpTimeout (every MongoDB operation; zero: 30 s),
// SQLiteSyncFull (fsync every SQLite commit). See engine.Config for each field.
type Config = engine.Config

// DB is an open database on one engine.
type DB struct {
	eng engine.Engine
}

// Open opens the database cfg names: MongoDB for a mongodb URI, SQLite otherwise.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*DB, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Name == "" {
		return nil, errors.New("database name is empty")
	}
	switch {
	case cfg.URI == "":
		e, err := sqlite.Open(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		return &DB{eng: e}, nil
	case strings.HasPrefix(cfg.URI, "mongodb://"), strings.HasPrefix(cfg.URI, "mongodb+srv://"):
		e, err := mongo.Open(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		return &DB{eng: e}, nil
	default:
		return nil, fmt.Errorf("database.uri %q: want mongodb:// or mongodb+srv://, or empty for the embedded database", engine.RedactURI(cfg.URI))
	}
}

// Engine names the engine: "sqlite" or "mongodb".
func (d *DB) Engine() string { return d.eng.Name() }

// Embedded reports whether the database is the embedded single-node engine.
func (d *DB) Embedded() bool { return d.eng.Name() == "sqlite" }

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error { return d.eng.Ping(ctx) }

// Close releases the database.
func (d *DB) Close(ctx context.Context) error { return d.eng.Close(ctx) }

// Collections lists the names of the collections that exist in the database.
func (d *DB) Collections(ctx context.Context) ([]string, error) { return d.eng.Collections(ctx) }

// checkTallies refuses, on both engines, a tally the embedded engine could not keep: unnamed, a name used
// twice or holding a character a collection name may not, no path, a path twice, the _id or an array path.
func checkTallies(spec Spec, arrays arrayPaths) error {
	names := map[string]bool{}
	for _, t := range spec.Tallies {
		if t.Name == "" || names[t.Name] || strings.ContainsAny(t.Name, "\"$") || len(t.Paths) == 0 {
			return fmt.Errorf("docstore: collection %s: tally %q: a name of its own and at least one path", spec.Name, t.Name)
		}
		names[t.Name] = true
		paths := map[string]bool{}
		for _, p := range t.Paths {
			if err := arrays.path(p); err != nil {
				return fmt.Errorf("docstore: collection %s tally %s: %w", spec.Name, t.Name, err)
			}
			if p == "_id" || paths[p] || arrays[p] {
				return fmt.Errorf("docstore: collection %s tally %s: %s is the _id, an array path or there twice", spec.Name, t.Name, p)
			}
			paths[p] = true
		}
	}
	return nil
}

// Collection opens (creating when needed) the collection spec describes and its indexes.
func (d *DB) Collection(ctx context.Context, spec Spec) (*Collection, error) {
	if spec.Name == "" {
		return nil, errors.New("docstore: collection name is empty")
	}
	arrays, err := newArrayPaths(spec)
	if err != nil {
		return nil, err
	}
	for _, ix := range spec.Indexes {
		if ix.Name == "" || len(ix.Keys) == 0 {
			return nil, fmt.Errorf("docstore: collection %s: an index needs a name and keys", spec.Name)
		}
		for _, k := range ix.Keys {
			if err := arrays.path(k.Path); err != nil {
				return nil, fmt.Errorf("docstore: collection %s index %s: %w", spec.Name, ix.Name, err)
			}
		}
	}
	if err := checkTallies(spec, arrays); err != nil {
		return nil, err
	}
	c, err := d.eng.Collection(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &Collection{name: spec.Name, c: c, arrays: arrays}, nil
}

// Spec declares a collection: its Name, its Indexes (created on both engines) and its Arrays, the paths whose
// values are arrays (a filter on such a path matches a document whose array holds a matching element, MongoDB's
// rule; on SQLite the translator needs to know which paths they are). Arrays must list every path where a
// document holds an array (outside the elements of another declared array): a write that would store an array
// anywhere else is ErrUndeclaredArray, on both engines (check.go).
type Spec = engine.Spec

// Index is one index of a collection: a Name, its Keys, Unique or not. On SQLite it is an expression index on
// exactly the expressions the generated queries use for these paths.
type Index = engine.Index

// Tally is one count the embedded engine keeps per combination of a few paths' values (Spec.Tallies).
type Tally = engine.Tally

// Key is one key of an index: a Path, Desc(ending) or not.
type Key = engine.Key

// Asc and Desc build index keys.
func Asc(path string) Key  { return Key{Path: path} }
func Desc(path string) Key { return Key{Path: path, Desc: true} }

// Query is what Find reads: the documents matching Filter, ordered by Sort, from Offset, at most Limit
// (0 = no limit). Fields, when set, is a projection: only these top-level paths (and _id) need be filled.
type Query = engine.Query

// Group is one group of GroupCount: a Value of the grouped path and how many documents have it (Count).
type Group = engine.Group

// Collection is a named set of documents with an _id each.
type Collection struct {
	name   string
	c      engine.Coll
	arrays arrayPaths
}

// Name is the collection's name.
func (c *Collection) Name() string { return c.name }

// Insert stores doc. A document whose _id (or unique key) exists is ErrDuplicate.
func (c *Collection) Insert(ctx context.Context, doc any) error {
	id, raw, err := c.encodeDoc(doc)
	if err != nil {
		return fmt.Errorf("insert into %s: %w", c.name, err)
	}
	if err := c.c.Insert(ctx, id, raw); err != nil {
		return fmt.Errorf("insert into %s: %w", c.name, err)
	}
	return nil
}

// InsertMany stores each of docs independently and returns one result per document, in order: nil when it was
// stored, an error wrapping ErrDuplicate when its key exists, another error otherwise. The returned error is
// for failures that stopped the whole call (a closed database, an unencodable document).
func (c *Collection) InsertMany(ctx context.Context, docs []any) ([]error, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	raws := make([]Raw, len(docs))
	for i, d := range docs {
		id, raw, err := c.encodeDoc(d)
		if err != nil {
			return nil, fmt.Errorf("insert into %s: document %d: %w", c.name, i, err)
		}
		raws[i] = Raw{ID: id, JSON: raw}
	}
	res, err := c.c.InsertMany(ctx, raws)
	if err != nil {
		return nil, fmt.Errorf("insert into %s: %w", c.name, err)
	}
	return res, nil
}

// Raw is a document as stored: its ID (_id) and its JSON encoding.
type Raw = engine.Raw

// Insertion is one document of DB.InsertAll: Doc, to be stored in Coll.
type Insertion struct {
	Coll *Collection
	Doc  any
}

// InsertAll stores each document in its collection, in order, and returns one result per document, as
// InsertMany does (nil when stored, an error wrapping ErrDuplicate when its key exists: the others are stored
// all the same). On the embedded engine the documents are written in one transaction, so a reader sees all of
// them or none, and they share one commit; on MongoDB they are written one after the other, so a reader may
// see the first ones before the last (write them in the order readers need).
func (d *DB) InsertAll(ctx context.Context, ins ...Insertion) ([]error, error) {
	raws := make([]engine.Insertion, len(ins))
	for i, in := range ins {
		id, raw, err := in.Coll.encodeDoc(in.Doc)
		if err != nil {
			return nil, fmt.Errorf("insert into %s: %w", in.Coll.name, err)
		}
		raws[i] = engine.Insertion{Coll: in.Coll.c, Raw: Raw{ID: id, JSON: raw}}
	}
	res, err := d.eng.InsertAll(ctx, raws)
	if err != nil {
		return nil, fmt.Errorf("insert: %w", err)
	}
	return res, nil
}

// Get decodes the document with this _id into out (a pointer); ErrNotFound when there is none.
func (c *Collection) Get(ctx context.Context, id string, out any) error {
	return c.FindOne(ctx, ID(id), nil, out)
}

// FindOne decodes the first document matching f in sort's order into out; ErrNotFound when none matches.
func (c *Collection) FindOne(ctx context.Context, f search.Node, sort []search.SortKey, out any) error {
	docs, err := c.find(ctx, Query{Filter: f, Sort: sort, Limit: 1})
	if err != nil {
		return fmt.Errorf("find in %s: %w", c.name, err)
	}
	if len(docs) == 0 {
		return ErrNotFound
	}
	if err := json.Unmarshal(docs[0], out); err != nil {
		return fmt.Errorf("decode from %s: %w", c.name, err)
	}
	return nil
}

// Find decodes the documents q selects into out, a pointer to a slice.
func (c *Collection) Find(ctx context.Context, q Query, out any) error {
	docs, err := c.find(ctx, q)
	if err != nil {
		return fmt.Errorf("find in %s: %w", c.name, err)
	}
	if err := decodeAll(docs, out); err != nil {
		return fmt.Errorf("decode from %s: %w", c.name, err)
	}
	return nil
}

// FindRaw returns the documents q selects as stored (for copies between engines).
func (c *Collection) FindRaw(ctx context.Context, q Query) ([][]byte, error) {
	docs, err := c.find(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("find in %s: %w", c.name, err)
	}
	return docs, nil
}

// FindPage runs a list or search: the documents matching f in p's order, then by _id so that pages are
// stable, from p.Offset, at most p.Limit of them (0 = all), decoded into out (a pointer to a slice), and the
// total number of matches. The count runs beside the find (on another connection): on a large collection it
// is the longer of the two (it visits every match), and the page no longer waits for it to start.
func (c *Collection) FindPage(ctx context.Context, f search.Node, p search.Page, out any) (int64, error) {
	return c.FindPageCounted(ctx, f, p, out, func(ctx context.Context) (int64, error) { return c.Count(ctx, f) })
}

// FindPageCounted is FindPage with the total given by count, run beside the find, rather than by counting
// what f matches: for a store whose total is not its page filter's count (or is cheaper counted otherwise).
func (c *Collection) FindPageCounted(ctx context.Context, f search.Node, p search.Page, out any,
	count func(context.Context) (int64, error)) (int64, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type counted struct {
		n   int64
		err error
	}
	total := make(chan counted, 1)
	go func() {
		n, err := count(cctx)
		total <- counted{n, err}
	}()
	if err := c.Find(ctx, Query{Filter: f, Sort: StableSort(p.Sort), Offset: p.Offset, Limit: p.Limit}, out); err != nil {
		cancel()
		<-total
		return 0, err
	}
	res := <-total
	return res.n, res.err
}

// StableSort returns keys followed by _id ascending unless keys already order by _id.
func StableSort(keys []search.SortKey) []search.SortKey {
	for _, k := range keys {
		if k.Path == "_id" {
			return keys
		}
	}
	out := make([]search.SortKey, 0, len(keys)+1)
	out = append(out, keys...)
	return append(out, search.SortKey{Path: "_id"})
}

// Count returns how many documents match f.
func (c *Collection) Count(ctx context.Context, f search.Node) (int64, error) {
	if err := c.arrays.filter(f); err != nil {
		return 0, fmt.Errorf("count %s: %w", c.name, err)
	}
	n, err := c.c.Count(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", c.name, err)
	}
	return n, nil
}

// Exists reports whether a document matches f (it reads at most one).
func (c *Collection) Exists(ctx context.Context, f search.Node) (bool, error) {
	docs, err := c.find(ctx, Query{Filter: f, Limit: 1, Fields: []string{"_id"}})
	if err != nil {
		return false, fmt.Errorf("find in %s: %w", c.name, err)
	}
	return len(docs) > 0, nil
}

// UpdateOne applies u to one document matching f and reports whether one matched. With upsert and no match,
// it inserts a document made of f's equality conditions (f must be an Eq or an And of Eqs holding _id) with u
// applied, and reports true.
func (c *Collection) UpdateOne(ctx context.Context, f search.Node, u Update, upsert bool) (bool, error) {
	if err := c.checkUpdate(f, u, upsert); err != nil {
		return false, err
	}
	n, err := c.c.Update(ctx, f, u.ops, false, upsert)
	if err != nil {
		return false, fmt.Errorf("update %s: %w", c.name, err)
	}
	return n > 0, nil
}

// UpdateMany applies u to every document matching f and returns how many matched.
func (c *Collection) UpdateMany(ctx context.Context, f search.Node, u Update) (int64, error) {
	if err := c.checkUpdate(f, u, false); err != nil {
		return 0, err
	}
	n, err := c.c.Update(ctx, f, u.ops, true, false)
	if err != nil {
		return 0, fmt.Errorf("update %s: %w", c.name, err)
	}
	return n, nil
}

// FindOneAndUpdate atomically applies u to the first document matching f in sort's order and decodes it into
// out (nil: not decoded) as it is after the update, or before it with returnBefore. Upsert as in UpdateOne
// (the decoded document is then the inserted one, or nothing before it: ErrNotFound). ErrNotFound when
// nothing matched and upsert is false.
func (c *Collection) FindOneAndUpdate(ctx context.Context, f search.Node, sort []search.SortKey, u Update, opts FindAndUpdate, out any) error {
	if err := c.checkUpdate(f, u, opts.Upsert); err != nil {
		return err
	}
	for _, k := range sort {
		if err := c.arrays.path(k.Path); err != nil {
			return fmt.Errorf("update %s: %w", c.name, err)
		}
	}
	doc, err := c.c.FindOneAndUpdate(ctx, f, sort, u.ops, opts)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return ErrNotFound
		}
		return fmt.Errorf("update %s: %w", c.name, err)
	}
	if doc == nil {
		return ErrNotFound
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(doc, out); err != nil {
		return fmt.Errorf("decode from %s: %w", c.name, err)
	}
	return nil
}

// FindAndUpdate are the options of FindOneAndUpdate: Upsert, ReturnBefore.
type FindAndUpdate = engine.FindAndUpdate

// Replace replaces the whole document with doc's _id by doc; ErrNotFound when there is none, unless upsert.
func (c *Collection) Replace(ctx context.Context, doc any, upsert bool) error {
	id, raw, err := c.encodeDoc(doc)
	if err != nil {
		return fmt.Errorf("replace in %s: %w", c.name, err)
	}
	ok, err := c.c.Replace(ctx, id, raw, upsert)
	if err != nil {
		return fmt.Errorf("replace in %s: %w", c.name, err)
	}
	if !ok {
		return ErrNotFound
	}
	return nil
}

// DeleteOne deletes one document matching f and reports whether there was one.
func (c *Collection) DeleteOne(ctx context.Context, f search.Node) (bool, error) {
	if err := c.arrays.filter(f); err != nil {
		return false, fmt.Errorf("delete from %s: %w", c.name, err)
	}
	n, err := c.c.Delete(ctx, f, false)
	if err != nil {
		return false, fmt.Errorf("delete from %s: %w", c.name, err)
	}
	return n > 0, nil
}

// DeleteMany deletes every document matching f and returns how many.
func (c *Collection) DeleteMany(ctx context.Context, f search.Node) (int64, error) {
	if err := c.arrays.filter(f); err != nil {
		return 0, fmt.Errorf("delete from %s: %w", c.name, err)
	}
	n, err := c.c.Delete(ctx, f, true)
	if err != nil {
		return 0, fmt.Errorf("delete from %s: %w", c.name, err)
	}
	return n, nil
}

// GroupCount counts the documents matching f by the value of path (each element, for an array path), largest
// count first, then by value; at most limit groups (0 = all). Documents without the path form the group nil.
func (c *Collection) GroupCount(ctx context.Context, f search.Node, path string, limit int) ([]Group, error) {
	if err := c.arrays.path(path); err != nil {
		return nil, fmt.Errorf("group %s by %s: %w", c.name, path, err)
	}
	if err := c.arrays.filter(f); err != nil {
		return nil, fmt.Errorf("group %s by %s: %w", c.name, path, err)
	}
	g, err := c.c.GroupCount(ctx, f, path, limit)
	if err != nil {
		return nil, fmt.Errorf("group %s by %s: %w", c.name, path, err)
	}
	return g, nil
}

// find checks the paths of q and runs it.
func (c *Collection) find(ctx context.Context, q Query) ([][]byte, error) {
	if err := c.arrays.query(q); err != nil {
		return nil, err
	}
	return c.c.Find(ctx, q)
}

// checkUpdate checks an update and the filter it applies to (their paths, and the arrays it would store).
func (c *Collection) checkUpdate(f search.Node, u Update, upsert bool) error {
	if err := u.check(); err != nil {
		return err
	}
	if err := c.arrays.filter(f); err != nil {
		return fmt.Errorf("update %s: %w", c.name, err)
	}
	if err := c.arrays.update(u.ops, f, upsert); err != nil {
		return fmt.Errorf("update %s: %w", c.name, err)
	}
	return nil
}

// encodeDoc returns the _id and the JSON of doc (see encodeDoc), which must store arrays only at the paths the
// collection declares.
func (c *Collection) encodeDoc(doc any) (string, []byte, error) {
	id, raw, err := encodeDoc(doc)
	if err != nil {
		return "", nil, err
	}
	if err := c.arrays.doc(raw); err != nil {
		return "", nil, err
	}
	return id, raw, nil
}

// encodeDoc returns the _id and the JSON of doc, which must encode to an object with a non-empty string _id.
func encodeDoc(doc any) (string, []byte, error) {
	var raw []byte
	switch d := doc.(type) {
	case json.RawMessage:
		raw = d
	case []byte:
		raw = d
	default:
		b, err := json.Marshal(doc)
		if err != nil {
			return "", nil, fmt.Errorf("encode document: %w", err)
		}
		raw = b
	}
	var head struct {
		ID any `json:"_id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return "", nil, fmt.Errorf("document is not a JSON object: %w", err)
	}
	id, ok := head.ID.(string)
	if !ok || id == "" {
		return "", nil, errors.New("document has no string _id")
	}
	return id, raw, nil
}

// decodeAll decodes JSON documents into out, a pointer to a slice, in one pass.
func decodeAll(docs [][]byte, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Slice {
		return errors.New("out must point to a slice")
	}
	var b bytes.Buffer
	n := 2
	for _, d := range docs {
		n += len(d) + 1
	}
	b.Grow(n)
	b.WriteByte('[')
	for i, d := range docs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(d)
	}
	b.WriteByte(']')
	rv.Elem().SetLen(0)
	return json.Unmarshal(b.Bytes(), out)
}

// errBadFilter is returned for a filter node an engine cannot translate.
var errBadFilter = apperr.New(apperr.Internal, "docstore: unsupported filter")
