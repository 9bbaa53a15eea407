// Package sqlite is the SQLite engine of pkg/docstore (modernc.org/sqlite, pure Go): the embedded, single-node
// default, with its translation of filters, sorts and updates into SQL. pkg/docstore opens it for an empty
// database URI; stores never import it.
//
// Storage: one file Path/Name.db in WAL mode with synchronous=NORMAL: a write is acknowledged once its commit
// is in the WAL, which is in the operating system's page cache, so an acknowledged write survives the crash
// or kill -9 of the process; only a power loss or kernel crash can lose the last commits (never corrupt the
// file). FULL would fsync every commit, a few milliseconds each on most disks, for no gain against process
// crashes. Path/Name.lock is held (flock) while the database is open, so that a second process fails at once
// with a clear error instead of sharing the file: the embedded engine is for one process.
//
// Every collection is a table (id TEXT PRIMARY KEY, doc TEXT NOT NULL), doc being the whole JSON document.
// A path maps to exactly one SQL expression (sqlExpr in filter.go: id for _id, json_extract(doc,'$."a"."b"')
// otherwise), used by index definitions and queries alike, so that declared indexes serve the generated
// queries. A non-unique index ends with id, so that the stable sort of FindPage (keys, then _id) is read in
// index order.
//
// Writes go through one connection, each in a BEGIN IMMEDIATE transaction (or a single statement): Go
// serializes the writers instead of SQLite's sleeping busy handler, and concurrent writes share one commit
// (group commit, group.go). Reads use a pool of query_only connections and see the last committed state (WAL
// snapshots). Updates read the matching documents, apply the operations in Go (update.go) and write them back,
// all in one transaction, so that queue claims, counters and upserts are atomic. An update rewrites only what
// its operations change: the rest of the document keeps its text (the order of every object's keys, numbers
// as written, integers of any size included), as MongoDB keeps a document through an update. Tallies (tally.go) are
// counts per combination of a few paths' values, kept by triggers in those same transactions, that answer a
// Count testing only those paths without visiting the documents.
//
// Differences from MongoDB that remain (the conformance suite pins what both engines do):
//   - A filter on a path matches an array's elements for the paths the collection declares in Spec.Arrays,
//     and pkg/docstore refuses, on both engines, a write that would put an array anywhere else (outside the
//     elements of a declared array) and a filter, sort or group on a path through a declared array. A numeric
//     path segment ("a.0") is an object key in filters, sorts and indexes, never an array index.
//   - json_extract reads an integer beyond int64 as a double: filters and sorts compare such a number as the
//     nearest double (MongoDB, which keeps it as a decimal128, compares it exactly). The document keeps it as
//     written; an increment of it gives a double (MongoDB: a decimal128).
//   - json_extract reads true and false as 1 and 0. Equality, In and ranges check the JSON type where a 0 or 1
//     could be involved (only then, to keep counts on the index), and GroupCount splits bools from 0/1; but
//     sorting puts bools among the numbers (MongoDB: after everything else).
//   - Objects and arrays read by json_extract are their JSON text: a range or a text operator (Like, Prefix…)
//     on a path holding an object can match that text, and sorting puts them among the strings. An array path
//     sorts by its JSON text (MongoDB sorts by the smallest or largest element). Equality with an object
//     compares JSON text, so the order of its keys matters (as in MongoDB).
//   - Exists on an array path is true for an array holding null elements (MongoDB's $ne: null says no).
//   - Query.Fields is ignored: whole documents are returned.
//   - A unique index is two SQLite indexes: the declared one (on the query expressions, NULLs distinct) and a
//     partial one, <coll>_<name>_null, over the documents with a missing key, so that as in MongoDB a second
//     document without the key is a duplicate.
//
// Performance notes: an index on an array path (Spec.Arrays) does not serve element filters (json_each is
// not indexable); the driver keeps each statement prepared (since modernc.org/sqlite v1.41), and the
// statement cache (stmt.go) binds statements to the write connection. Checkpoints are SQLite's own (every
// 1,000 pages of WAL, in the committing write): moving them to a background connection was measured and
// reverted (docs/performance.md).
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/openir/platform/pkg/docstore/internal/engine"
	"github.com/openir/platform/pkg/search"
)

// sqliteReaders is the size of the read pool.
const sqliteReaders = 4

// Engine is an open SQLite database: the engine behind a docstore.DB on the embedded database.
type Engine struct {
	file   string
	w      *sql.DB   // one connection: every write
	r      *sql.DB   // query_only connections: every read outside a write
	rs     stmtCache // statements of the read pool
	wr     writer    // the write connection
	wq     writeQueue
	groups atomic.Int64 // group commits (of more than one write) so far
	lock   *os.File
	log    *slog.Logger
	closed sync.Once
	cerr   error
}

// Open opens (creating) Path/Name.db.
func Open(ctx context.Context, cfg engine.Config, log *slog.Logger) (*Engine, error) {
	if cfg.Path == "" {
		return nil, errors.New("database.path is empty: the embedded database needs a folder")
	}
	if strings.ContainsAny(cfg.Name, `/\?#`) || cfg.Name == "." || cfg.Name == ".." {
		return nil, fmt.Errorf("database name %q: not a file name", cfg.Name)
	}
	if strings.Contains(cfg.Path, "?") {
		return nil, fmt.Errorf("database.path %q: must not contain '?'", cfg.Path)
	}
	if err := os.MkdirAll(cfg.Path, 0o700); err != nil {
		return nil, fmt.Errorf("create database folder: %w", err)
	}
	file := filepath.Join(cfg.Path, cfg.Name+".db")
	lock, err := lockDatabase(filepath.Join(cfg.Path, cfg.Name+".lock"), file)
	if err != nil {
		return nil, err
	}
	registerSQLiteFuncs()
	e := &Engine{file: file, lock: lock, log: log}
	fail := func(err error) (*Engine, error) {
		if e.w != nil {
			_ = e.w.Close()
		}
		if e.r != nil {
			_ = e.r.Close()
		}
		unlockDatabase(lock)
		return nil, err
	}
	sync := "NORMAL"
	if cfg.SQLiteSyncFull {
		sync = "FULL"
	}
	common := "?_pragma=busy_timeout(10000)&_pragma=cache_size(-8000)&_pragma=temp_store(MEMORY)"
	e.w, err = sql.Open("sqlite", file+common+"&_pragma=journal_mode(WAL)&_pragma=synchronous("+sync+")&_txlock=immediate")
	if err != nil {
		return fail(fmt.Errorf("open %s: %w", file, err))
	}
	e.w.SetMaxOpenConns(1)
	e.w.SetMaxIdleConns(1)
	e.w.SetConnMaxLifetime(0)
	e.w.SetConnMaxIdleTime(0)
	if err := e.w.PingContext(ctx); err != nil {
		return fail(fmt.Errorf("open %s: %w", file, err))
	}
	e.r, err = sql.Open("sqlite", file+common+"&_pragma=query_only(1)")
	if err != nil {
		return fail(fmt.Errorf("open %s: %w", file, err))
	}
	e.r.SetMaxOpenConns(sqliteReaders)
	e.r.SetMaxIdleConns(sqliteReaders)
	e.r.SetConnMaxLifetime(0)
	e.r.SetConnMaxIdleTime(0)
	if err := e.r.PingContext(ctx); err != nil {
		return fail(fmt.Errorf("open %s: %w", file, err))
	}
	e.rs.db = e.r
	conn, err := e.w.Conn(ctx)
	if err != nil {
		return fail(fmt.Errorf("open %s: %w", file, err))
	}
	e.wr = writer{sem: make(chan struct{}, 1), conn: conn}
	return e, nil
}

func (e *Engine) Name() string { return "sqlite" }

func (e *Engine) Ping(ctx context.Context) error {
	var one int
	return e.r.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

func (e *Engine) Close(ctx context.Context) error {
	e.closed.Do(func() {
		if e.acquire(ctx) == nil {
			_, _ = e.wr.conn.ExecContext(ctx, "PRAGMA optimize")
			e.wr.closeStmts()
			_ = e.wr.conn.Close()
		}
		e.rs.close()
		err1 := e.r.Close()
		err2 := e.w.Close()
		unlockDatabase(e.lock)
		e.cerr = errors.Join(err1, err2)
	})
	return e.cerr
}

func (e *Engine) Collections(ctx context.Context) ([]string, error) {
	rows, err := e.r.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type='table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND instr(name,'$')=0 ORDER BY name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Collection creates the table and the indexes of spec. An index whose definition changed is rebuilt.
func (e *Engine) Collection(ctx context.Context, spec engine.Spec) (engine.Coll, error) {
	if err := checkCollName(spec.Name); err != nil {
		return nil, err
	}
	c := &coll{e: e, name: spec.Name, table: `"` + spec.Name + `"`, arrays: map[string]bool{}}
	for _, p := range spec.Arrays {
		if err := engine.CheckPath(p); err != nil {
			return nil, fmt.Errorf("docstore: collection %s: array %w", spec.Name, err)
		}
		c.arrays[p] = true
	}
	err := e.write(ctx, func(ctx context.Context, tx *wtx) error {
		if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+c.table+" (id TEXT PRIMARY KEY, doc TEXT NOT NULL)"); err != nil {
			return err
		}
		type wanted struct{ name, sql string }
		var all []wanted
		for _, ix := range spec.Indexes {
			name := spec.Name + "_" + ix.Name
			if err := checkCollName(name); err != nil {
				return err
			}
			all = append(all, wanted{name, indexSQL(c.table, name, ix)})
			keys := slices.Clone(ix.Keys)
			if !ix.Unique && !slices.ContainsFunc(keys, func(k engine.Key) bool { return k.Path == "_id" }) {
				keys = append(keys, engine.Key{Path: "_id"})
			}
			c.indexes = append(c.indexes, sqliteIndex{name: name, keys: keys})
			if ix.Unique {
				all = append(all, wanted{name + "_null", uniqueNullSQL(c.table, name+"_null", ix)})
			}
		}
		for _, ix := range all {
			name, want := ix.name, ix.sql
			var have string
			err := tx.QueryRowContext(ctx, "SELECT sql FROM sqlite_schema WHERE type='index' AND name=?", name).Scan(&have)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return err
			case have == want:
				continue
			default:
				e.log.Info("rebuilding a changed index", "collection", spec.Name, "index", name)
				if _, err := tx.ExecContext(ctx, `DROP INDEX "`+name+`"`); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, want); err != nil {
				return fmt.Errorf("index %s: %w", name, sqliteErr(err))
			}
		}
		c.tallies = nil
		for _, t := range spec.Tallies {
			tl, err := c.ensureTally(ctx, tx, t)
			if err != nil {
				return err
			}
			c.tallies = append(c.tallies, tl)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("docstore: collection %s: %w", spec.Name, err)
	}
	return c, nil
}

// indexSQL is the CREATE INDEX statement of ix as SQLite keeps it in its schema.
func indexSQL(table, name string, ix engine.Index) string {
	var b strings.Builder
	b.WriteString("CREATE ")
	if ix.Unique {
		b.WriteString("UNIQUE ")
	}
	b.WriteString(`INDEX "` + name + `" ON ` + table + "(")
	hasID := false
	for i, k := range ix.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(sqlExpr(k.Path))
		if k.Desc {
			b.WriteString(" DESC")
		}
		hasID = hasID || k.Path == "_id"
	}
	if !ix.Unique && !hasID {
		b.WriteString(",id")
	}
	b.WriteByte(')')
	return b.String()
}

// uniqueNullSQL is the partial index that makes a missing or null key count as one value of a unique index,
// as in MongoDB (SQLite's unique indexes take NULLs as distinct): it holds only the documents with a missing
// key, each NULL replaced by a blob (which no JSON value equals).
func uniqueNullSQL(table, name string, ix engine.Index) string {
	var keys, cond []string
	for _, k := range ix.Keys {
		keys = append(keys, "ifnull("+sqlExpr(k.Path)+",x'00')")
		cond = append(cond, sqlExpr(k.Path)+" IS NULL")
	}
	return `CREATE UNIQUE INDEX "` + name + `" ON ` + table + "(" + strings.Join(keys, ",") + ") WHERE " + strings.Join(cond, " OR ")
}

// checkCollName refuses table names that cannot be quoted literally or are SQLite's.
func checkCollName(n string) error {
	if n == "" || strings.HasPrefix(strings.ToLower(n), "sqlite_") {
		return fmt.Errorf("docstore: bad collection name %q", n)
	}
	for _, r := range n {
		if r < 0x20 || r == '"' || r == '$' || r == 0x7f { // '$': MongoDB's rule, and the tallies' tables (tally.go)
			return fmt.Errorf("docstore: bad collection name %q", n)
		}
	}
	return nil
}

// write runs fn in one IMMEDIATE transaction on the write connection (alone, or with other writes in one
// group commit, in a savepoint of its own: group.go). fn must use the context it is given.
func (e *Engine) write(ctx context.Context, fn func(ctx context.Context, tx *wtx) error) error {
	return e.submit(ctx, true, fn)
}

// sqliteErr wraps engine.ErrDuplicate around a unique-constraint violation.
func sqliteErr(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w (%s)", engine.ErrDuplicate, se.Error())
		}
	}
	return err
}

type coll struct {
	e       *Engine
	name    string
	table   string // quoted
	arrays  map[string]bool
	indexes []sqliteIndex // the declared indexes, as SQLite orders them
	tallies []tally       // the declared tallies (tally.go)
}

// sqliteIndex is a declared index: its SQLite name and its keys, the implicit trailing id of a non-unique
// index included.
type sqliteIndex struct {
	name string
	keys []engine.Key
}

func (c *coll) Insert(ctx context.Context, id string, doc []byte) error {
	_, err := c.e.exec(ctx, "INSERT INTO "+c.table+" (id,doc) VALUES (?,?)", id, string(doc))
	return sqliteErr(err)
}

// InsertMany inserts in one transaction; a failed INSERT only undoes itself, so a duplicate is that
// document's error and the others are stored.
// InsertAll inserts the documents, each into its collection, in one transaction (one savepoint of a group
// commit): a duplicate is that document's result, any other error undoes them all.
func (e *Engine) InsertAll(ctx context.Context, ins []engine.Insertion) ([]error, error) {
	res := make([]error, len(ins))
	for _, in := range ins {
		if c, ok := in.Coll.(*coll); !ok || c.e != e {
			return nil, errors.New("docstore: InsertAll: a collection of another database")
		}
	}
	err := e.write(ctx, func(ctx context.Context, tx *wtx) error {
		for i, in := range ins {
			c := in.Coll.(*coll)
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+c.table+" (id,doc) VALUES (?,?)", in.ID, string(in.JSON)); err != nil {
				err = sqliteErr(err)
				if !errors.Is(err, engine.ErrDuplicate) {
					return err
				}
				res[i] = err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (c *coll) InsertMany(ctx context.Context, docs []engine.Raw) ([]error, error) {
	res := make([]error, len(docs))
	err := c.e.write(ctx, func(ctx context.Context, tx *wtx) error {
		st, err := tx.stmt(ctx, "INSERT INTO "+c.table+" (id,doc) VALUES (?,?)")
		if err != nil {
			return err
		}
		for i, d := range docs {
			if _, err := st.ExecContext(ctx, d.ID, string(d.JSON)); err != nil {
				err = sqliteErr(err)
				if !errors.Is(err, engine.ErrDuplicate) {
					return err
				}
				res[i] = err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// selectSQL returns SELECT cols FROM table WHERE f ORDER BY sort LIMIT/OFFSET and its arguments.
func (c *coll) selectSQL(cols string, q engine.Query) (string, []any, error) {
	where, args, err := sqlFilter(q.Filter, c.arrays)
	if err != nil {
		return "", nil, err
	}
	order, err := sqlOrder(q.Sort)
	if err != nil {
		return "", nil, err
	}
	from := c.table
	if byID(q.Filter) {
		from += c.idIndex()
	} else if ix := c.orderIndex(q); ix != "" {
		from += ` INDEXED BY "` + ix + `"`
	}
	s := "SELECT " + cols + " FROM " + from + " WHERE " + where + order
	switch {
	case q.Limit > 0 && q.Offset > 0:
		s += " LIMIT ? OFFSET ?"
		args = append(args, int64(q.Limit), int64(q.Offset))
	case q.Limit > 0:
		s += " LIMIT ?"
		args = append(args, int64(q.Limit))
	case q.Offset > 0:
		s += " LIMIT -1 OFFSET ?"
		args = append(args, int64(q.Offset))
	}
	return s, args, nil
}

// byID tells whether f names its documents by _id (an equality or a list of ids, alone or in the top-level
// conjunction): then the primary key is the index to read, at most one entry per id. SQLite, which keeps no
// statistics, would rather take an index matching two or three equalities than a list of three ids, and read
// every document those equalities match.
func byID(f search.Node) bool {
	switch f.Op {
	case search.OpEq:
		return f.Path == "_id" && f.Value != nil
	case search.OpIn:
		return f.Path == "_id" && len(f.Values) > 0 && !hasNil(f.Values)
	case search.OpAnd:
		for _, ch := range f.Children {
			if byID(ch) {
				return true
			}
		}
	}
	return false
}

// idIndex is the INDEXED BY clause of the primary key (the automatic index of the id column).
func (c *coll) idIndex() string {
	return ` INDEXED BY "sqlite_autoindex_` + c.name + `_1"`
}

// orderIndex names the declared index that reads a page of q (a sort and a limit) in its sort order, for
// selectSQL to impose with INDEXED BY; "" leaves the choice to SQLite. Without statistics on expressions,
// SQLite may prefer an index that also serves a range of the filter and then sort every match: with
// (organisation, status, severity) and (organisation, status, startDate), a page of open cases of severity ≥ 3
// by startDate sorted all 40,000 matches (230-370 ms) instead of reading 50 in order (< 1 ms). An order index
// is imposed only when no other index has more leading keys fixed by equalities of the filter, so that a
// selective equality keeps its own index, and when no other order index fixes as many.
func (c *coll) orderIndex(q engine.Query) string {
	if q.Limit <= 0 || len(q.Sort) == 0 || len(c.indexes) < 2 {
		return ""
	}
	eq := map[string]bool{}
	c.eqPaths(q.Filter, eq)
	best, bestEq, tied, otherEq := "", -1, false, 0
	for _, ix := range c.indexes {
		n := 0
		for n < len(ix.keys) && eq[ix.keys[n].Path] {
			n++
		}
		switch {
		case !readsInOrder(ix.keys[n:], q.Sort):
			otherEq = max(otherEq, n)
		case n > bestEq:
			best, bestEq, tied = ix.name, n, false
		case n == bestEq:
			tied = true
		}
	}
	if best == "" || tied || otherEq > bestEq {
		return "" // no order index, several alike (which is more selective is SQLite's guess), or a better equality
	}
	return best
}

// eqPaths adds the paths that f's top-level conjunction fixes with an equality to a scalar (not on an array
// path, whose elements an index does not serve).
func (c *coll) eqPaths(f search.Node, eq map[string]bool) {
	switch f.Op {
	case search.OpAnd:
		for _, ch := range f.Children {
			c.eqPaths(ch, eq)
		}
	case search.OpEq:
		if f.Value != nil && !c.arrays[f.Path] {
			eq[f.Path] = true
		}
	}
}

// readsInOrder says whether index keys (after the equality prefix) start with the sort keys, all in the same
// direction or all reversed (SQLite reads an index backwards).
func readsInOrder(keys []engine.Key, sort []search.SortKey) bool {
	if len(sort) > len(keys) {
		return false
	}
	flip := keys[0].Desc != sort[0].Desc
	for i, s := range sort {
		if keys[i].Path != s.Path || (keys[i].Desc != s.Desc) != flip {
			return false
		}
	}
	return true
}

func (c *coll) Find(ctx context.Context, q engine.Query) ([][]byte, error) {
	s, args, err := c.selectSQL("doc", q)
	if err != nil {
		return nil, err
	}
	rows, err := c.e.query(ctx, s, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]byte
	if q.Limit > 0 && q.Limit <= 1000 {
		out = make([][]byte, 0, q.Limit)
	}
	for rows.Next() {
		var d []byte
		if err := rows.Scan(&d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

func (c *coll) Count(ctx context.Context, f search.Node) (int64, error) {
	if n, ok, err := c.tallyCount(ctx, f); ok || err != nil {
		return n, err
	}
	where, args, err := sqlFilter(f, c.arrays)
	if err != nil {
		return 0, err
	}
	from := c.table
	if byID(f) {
		from += c.idIndex()
	}
	rows, err := c.e.query(ctx, "SELECT count(*) FROM "+from+" WHERE "+where, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}

// matching reads the id and document of the rows q selects inside tx.
func (c *coll) matching(ctx context.Context, tx *wtx, q engine.Query) ([]engine.Raw, error) {
	s, args, err := c.selectSQL("id,doc", q)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, s, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []engine.Raw
	for rows.Next() {
		var r engine.Raw
		if err := rows.Scan(&r.ID, &r.JSON); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (c *coll) Update(ctx context.Context, f search.Node, u []engine.Op, many, upsert bool) (int64, error) {
	var n int64
	err := c.e.write(ctx, func(ctx context.Context, tx *wtx) error {
		q := engine.Query{Filter: f}
		if !many {
			q.Limit = 1
		}
		docs, err := c.matching(ctx, tx, q)
		if err != nil {
			return err
		}
		for _, d := range docs {
			if _, err := c.applyAndWrite(ctx, tx, d, u); err != nil {
				return err
			}
		}
		n = int64(len(docs))
		if n == 0 && upsert {
			if _, err := c.upsert(ctx, tx, f, u); err != nil {
				return err
			}
			n = 1
		}
		return nil
	})
	return n, err
}

// applyAndWrite applies u to the stored document d and writes it back; it returns the new JSON.
func (c *coll) applyAndWrite(ctx context.Context, tx *wtx, d engine.Raw, u []engine.Op) ([]byte, error) {
	doc, err := parseDoc(d.JSON)
	if err != nil {
		return nil, fmt.Errorf("document %s: %w", d.ID, err)
	}
	if err := applyUpdate(doc, u); err != nil {
		return nil, fmt.Errorf("document %s: %w", d.ID, err)
	}
	b, err := encodeDoc(doc, len(d.JSON))
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE "+c.table+" SET doc=? WHERE id=?", string(b), d.ID); err != nil {
		return nil, sqliteErr(err)
	}
	return b, nil
}

// upsert inserts the document made of f's equalities with u applied.
func (c *coll) upsert(ctx context.Context, tx *wtx, f search.Node, u []engine.Op) ([]byte, error) {
	doc, id, err := upsertSeed(f)
	if err != nil {
		return nil, err
	}
	if err := applyUpdate(doc, u); err != nil {
		return nil, err
	}
	b, err := encodeDoc(doc, 0)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+c.table+" (id,doc) VALUES (?,?)", id, string(b)); err != nil {
		return nil, sqliteErr(err)
	}
	return b, nil
}

func (c *coll) FindOneAndUpdate(ctx context.Context, f search.Node, sort []search.SortKey, u []engine.Op, opts engine.FindAndUpdate) ([]byte, error) {
	var out []byte
	err := c.e.write(ctx, func(ctx context.Context, tx *wtx) error {
		docs, err := c.matching(ctx, tx, engine.Query{Filter: f, Sort: sort, Limit: 1})
		if err != nil {
			return err
		}
		if len(docs) == 0 {
			if !opts.Upsert {
				return engine.ErrNotFound
			}
			b, err := c.upsert(ctx, tx, f, u)
			if err != nil {
				return err
			}
			if !opts.ReturnBefore {
				out = b
			}
			return nil
		}
		b, err := c.applyAndWrite(ctx, tx, docs[0], u)
		if err != nil {
			return err
		}
		if opts.ReturnBefore {
			out = docs[0].JSON
		} else {
			out = b
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Replace writes doc over the document with its id. With upsert it is inserted when there is none; a unique
// index still refuses a value another document holds.
func (c *coll) Replace(ctx context.Context, id string, doc []byte, upsert bool) (bool, error) {
	if upsert {
		_, err := c.e.exec(ctx, "INSERT INTO "+c.table+" (id,doc) VALUES (?,?) ON CONFLICT(id) DO UPDATE SET doc=excluded.doc", id, string(doc))
		if err != nil {
			return false, sqliteErr(err)
		}
		return true, nil
	}
	res, err := c.e.exec(ctx, "UPDATE "+c.table+" SET doc=? WHERE id=?", string(doc), id)
	if err != nil {
		return false, sqliteErr(err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func (c *coll) Delete(ctx context.Context, f search.Node, many bool) (int64, error) {
	where, args, err := sqlFilter(f, c.arrays)
	if err != nil {
		return 0, err
	}
	s := "DELETE FROM " + c.table + " WHERE " + where
	if !many {
		s = "DELETE FROM " + c.table + " WHERE id IN (SELECT id FROM " + c.table + " WHERE " + where + " LIMIT 1)"
	}
	res, err := c.e.exec(ctx, s, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// GroupCount groups by the path's expression, or by the elements of an array path (json_each; a document
// without elements counts in the group nil). json_extract reads true and false as 1 and 0: each group also
// counts its bools, reading the JSON type only for the values 0 and 1 (so the count stays on the index), and
// when there are bools the groups are split and ordered in Go as MongoDB orders them (bools last).
func (c *coll) GroupCount(ctx context.Context, f search.Node, path string, limit int) ([]engine.Group, error) {
	out, bools, err := c.groups(ctx, f, path, limit)
	if err != nil || !bools {
		return out, err
	}
	if limit > 0 {
		if out, _, err = c.groups(ctx, f, path, 0); err != nil {
			return nil, err
		}
	}
	split := out
	slices.SortStableFunc(split, func(a, b engine.Group) int {
		if a.Count != b.Count {
			return cmp.Compare(b.Count, a.Count)
		}
		return engine.Compare(a.Value, b.Value)
	})
	if limit > 0 && len(split) > limit {
		split = split[:limit]
	}
	return split, nil
}

// groups runs the group query; bools tells whether a group held bools (then split into its own groups).
func (c *coll) groups(ctx context.Context, f search.Node, path string, limit int) ([]engine.Group, bool, error) {
	s, args, tallied, err := c.tallyGroups(f, path)
	if err != nil {
		return nil, false, err
	}
	where := ""
	if !tallied {
		if where, args, err = sqlFilter(f, c.arrays); err != nil {
			return nil, false, err
		}
	}
	switch {
	case tallied:
	case c.arrays[path] && path != "_id":
		s = "SELECT j.value, count(*), sum(j.type IN ('true','false')) FROM (SELECT doc FROM " + c.table + " WHERE " + where +
			") AS d LEFT JOIN json_each(d.doc," + sqlPath(path) + ") AS j GROUP BY 1 ORDER BY 2 DESC, 1"
	default:
		x := sqlExpr(path)
		s = "SELECT " + x + ", count(*), sum(CASE WHEN " + x + " IN (0,1) THEN json_type(doc," + sqlPath(path) +
			") IN ('true','false') ELSE 0 END) FROM " + c.table + " WHERE " + where + " GROUP BY 1 ORDER BY 2 DESC, 1"
	}
	if limit > 0 {
		s += " LIMIT ?"
		args = append(args, int64(limit))
	}
	rows, err := c.e.query(ctx, s, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var (
		out   []engine.Group
		bools bool
	)
	for rows.Next() {
		var (
			g engine.Group
			b sql.NullInt64
		)
		if err := rows.Scan(&g.Value, &g.Count, &b); err != nil {
			return nil, false, err
		}
		if v, ok := g.Value.([]byte); ok {
			g.Value = string(v)
		}
		if b.Int64 > 0 {
			bools = true
			if rest := g.Count - b.Int64; rest > 0 {
				out = append(out, engine.Group{Value: g.Value, Count: rest})
			}
			g = engine.Group{Value: g.Value == int64(1), Count: b.Int64}
		}
		out = append(out, g)
	}
	return out, bools, rows.Err()
}

// Explain returns SQLite's plan of the find q runs, one line per step.
func (c *coll) Explain(ctx context.Context, q engine.Query) (string, error) {
	s, args, err := c.selectSQL("doc", q)
	if err != nil {
		return "", err
	}
	conn, err := c.e.r.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	// EXPLAIN does not check the schema version the way a statement that reads does: read first, so that a
	// connection planned with a schema another connection changed since then loads the current one.
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
		return "", err
	}
	rows, err := conn.QueryContext(ctx, "EXPLAIN QUERY PLAN "+s, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return "", err
		}
		lines = append(lines, detail)
	}
	return strings.Join(lines, "\n"), rows.Err()
}

// Backup writes a consistent snapshot of the database to path (VACUUM INTO), which must not exist.
func (e *Engine) Backup(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("backup: %s exists", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	// A connection of its own: VACUUM INTO writes (so not on a query_only reader), and it reads a snapshot
	// like any reader, so writes go on meanwhile.
	db, err := sql.Open("sqlite", e.file+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	return nil
}

// BackupFile writes a consistent snapshot of the database file cfg names (Path/Name.db) to out, a new file,
// whether or not a process is serving from it: it reads through a connection of its own (VACUUM INTO reads one
// snapshot while writers go on), without the lock that keeps a second process off the file.
func BackupFile(ctx context.Context, cfg engine.Config, out string) error {
	file := filepath.Join(cfg.Path, cfg.Name+".db")
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("backup: no embedded database at %s: %w", file, err)
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("backup: %s exists", out)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	registerSQLiteFuncs()
	db, err := sql.Open("sqlite", file+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", out); err != nil {
		return fmt.Errorf("backup to %s: %w", out, err)
	}
	return os.Chmod(out, 0o600)
}

// DropIndex drops the index a spec declared under name, and its partial companion of a unique index.
func (c *coll) DropIndex(ctx context.Context, name string) error {
	full := c.name + "_" + name
	if err := checkCollName(full); err != nil {
		return err
	}
	for _, n := range []string{full, full + "_null"} {
		if _, err := c.e.exec(ctx, `DROP INDEX IF EXISTS "`+n+`"`); err != nil {
			return err
		}
	}
	return nil
}
