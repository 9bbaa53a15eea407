// Package engine is the contract between pkg/docstore and its two engines (pkg/docstore/sqlite and
// pkg/docstore/mongo): the interfaces an engine implements, the declarations and queries it is handed (pkg/docstore
// re-exports them as its own types: docstore.Spec is engine.Spec), the errors it returns, and the value rules
// both engines share (normalization, MongoDB's order of values, paths, text patterns). It is internal: stores
// see only pkg/docstore.
package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openir/platform/pkg/search"
)

// ErrNotFound is returned by Get, FindOne, FindOneAndUpdate and Replace when no document matches.
var ErrNotFound = errors.New("docstore: no document")

// ErrDuplicate is returned (wrapped) when a write would break a unique index or reuse an _id.
var ErrDuplicate = errors.New("docstore: duplicate key")

// Config says where the database is.
type Config struct {
	// URI is a mongodb:// or mongodb+srv:// URI; empty selects SQLite under Path.
	URI string
	// Name is the database name (MongoDB) or the file name without extension (SQLite: Path/Name.db).
	Name string
	// Path is the folder of the SQLite file.
	Path string
	// OpTimeout bounds every MongoDB operation (the driver's timeoutMS). Zero means 30 s.
	OpTimeout time.Duration
	// SQLiteSyncFull makes SQLite fsync every commit (synchronous=FULL): acknowledged writes then also survive
	// a power loss, at the cost of an fsync per write. The default (NORMAL) survives a crash of the process.
	SQLiteSyncFull bool
}

// Spec declares a collection: its indexes (created on both engines) and its array fields.
type Spec struct {
	Name    string
	Indexes []Index
	// Arrays lists the paths whose values are arrays. A filter on such a path matches a document whose array
	// holds a matching element (MongoDB's rule); on SQLite the translator needs to know which paths they are.
	Arrays []string
	// Tallies are counts the embedded engine keeps per distinct combination of a few paths' values, in the
	// same transaction as every write: a Count whose filter only tests these paths is then a sum over the
	// combinations rather than a visit of every matching document (an exact X-Total that does not grow with
	// the collection). MongoDB counts with the indexes, as before; the results are the same.
	Tallies []Tally
}

// Tally declares one kept count of a collection: its Name and the Paths whose combinations it counts (no
// array path, no _id; few distinct combinations, such as an organization, a status and a data type).
type Tally struct {
	Name  string
	Paths []string
}

// Index is one index of a collection. On SQLite it is an expression index on exactly the expressions the
// generated queries use for these paths.
type Index struct {
	Name   string
	Keys   []Key
	Unique bool
}

// Key is one key of an index: a path, descending or not.
type Key struct {
	Path string
	Desc bool
}

// Query is what Find reads: the documents matching Filter, ordered by Sort, from Offset, at most Limit
// (0 = no limit). Fields, when set, is a projection: only these top-level paths (and _id) need be filled.
type Query struct {
	Filter search.Node
	Sort   []search.SortKey
	Offset int
	Limit  int
	Fields []string
}

// Group is one group of GroupCount: a value of the grouped path and how many documents have it.
type Group struct {
	Value any
	Count int64
}

// Raw is a document as stored: its _id and its JSON encoding.
type Raw struct {
	ID   string
	JSON []byte
}

// FindAndUpdate are the options of FindOneAndUpdate.
type FindAndUpdate struct {
	Upsert       bool
	ReturnBefore bool
}

// OpKind is the kind of one update operation.
type OpKind int

const (
	OpSet OpKind = iota
	OpUnset
	OpInc
	OpAddToSet
	OpPull
)

// Op is one operation of an update (pkg/docstore's Update builds them, checked: paths valid and not
// conflicting, values normalized).
type Op struct {
	Kind  OpKind
	Path  string
	Value any   // set, inc
	Items []any // addToSet, pull
}

// Engine is one database engine.
type Engine interface {
	Name() string
	Ping(ctx context.Context) error
	Close(ctx context.Context) error
	Collections(ctx context.Context) ([]string, error)
	Collection(ctx context.Context, spec Spec) (Coll, error)
	// InsertAll inserts each document into its collection (one of this engine's), in order: one result per
	// document (nil or a duplicate), and an error when the write failed. SQLite: one transaction.
	InsertAll(ctx context.Context, ins []Insertion) ([]error, error)
}

// Insertion is one document of Engine.InsertAll and the collection it goes into.
type Insertion struct {
	Coll Coll
	Raw
}

// Coll is one collection of an engine. Documents come in and go out as JSON objects holding "_id"; filter and
// update values are normalized (see Normalize) before they reach it.
type Coll interface {
	Insert(ctx context.Context, id string, doc []byte) error
	InsertMany(ctx context.Context, docs []Raw) ([]error, error)
	Find(ctx context.Context, q Query) ([][]byte, error)
	Count(ctx context.Context, f search.Node) (int64, error)
	Update(ctx context.Context, f search.Node, u []Op, many, upsert bool) (int64, error)
	FindOneAndUpdate(ctx context.Context, f search.Node, sort []search.SortKey, u []Op, opts FindAndUpdate) ([]byte, error)
	Replace(ctx context.Context, id string, doc []byte, upsert bool) (bool, error)
	Delete(ctx context.Context, f search.Node, many bool) (int64, error)
	GroupCount(ctx context.Context, f search.Node, path string, limit int) ([]Group, error)
}

// ErrBadPath is returned (wrapped, naming the path) for a path that neither engine takes: see CheckPath, and
// pkg/docstore's check of the paths that go through a declared array.
var ErrBadPath = errors.New("docstore: bad path")

// ErrUndeclaredArray is returned (wrapped, naming the path) for a write that would put an array at a path the
// collection does not declare in Spec.Arrays (outside the elements of a declared array).
var ErrUndeclaredArray = errors.New("docstore: array at a path not declared in Spec.Arrays")

// CheckPath refuses paths the engines cannot take literally: empty segments, quotes, "$" at a segment's start,
// control characters. Paths come from code and allow-lists, never from clients, so a refusal is a bug.
func CheckPath(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty path", ErrBadPath)
	}
	start := true // at a segment's start
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c < 0x20 || c == '"' || c == '\'' || c == '\\' || c == 0x7f:
			return fmt.Errorf("%w %q", ErrBadPath, p)
		case c == '.':
			if start {
				return fmt.Errorf("%w %q", ErrBadPath, p)
			}
			start = true
			continue
		case c == '$' && start && i+1 < len(p) && p[i+1] != '.':
			return fmt.Errorf("%w %q", ErrBadPath, p)
		}
		start = false
	}
	if start { // a trailing "."
		return fmt.Errorf("%w %q", ErrBadPath, p)
	}
	return nil
}

// RedactURI drops the user information of a database URI for messages.
func RedactURI(uri string) string {
	if i := strings.Index(uri, "@"); i >= 0 {
		if j := strings.Index(uri, "://"); j >= 0 && j < i {
			return uri[:j+3] + "…" + uri[i:]
		}
	}
	return uri
}
