// Package mongo is the MongoDB engine of pkg/docstore (mongo-driver v2), with its translation of filters, sorts
// and updates into MongoDB's query and update documents. pkg/docstore opens it for a mongodb:// or
// mongodb+srv:// URI; stores never import it. It uses only what FerretDB v1 also offers (no transactions,
// $lookup, change streams, TTL or partial indexes, $elemMatch), so that FerretDB can stand in for MongoDB in the
// conformance suite. Every write is a single-document atomic operation of the server.
package mongo

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/openir/platform/pkg/docstore/internal/engine"
	"github.com/openir/platform/pkg/search"
)

// Engine is an open MongoDB database: the engine behind a docstore.DB on a mongodb:// URI.
type Engine struct {
	client *mongo.Client
	db     *mongo.Database
	log    *slog.Logger
}

// Open connects to cfg.URI (every operation bounded by cfg.OpTimeout, 30 s by default) and pings it.
func Open(ctx context.Context, cfg engine.Config, log *slog.Logger) (*Engine, error) {
	timeout := cfg.OpTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	opts := options.Client().ApplyURI(cfg.URI).SetTimeout(timeout).SetAppName(cfg.Name)
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, fmt.Errorf("connect to database %s: %w", engine.RedactURI(cfg.URI), err)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := client.Ping(pctx, readpref.Primary()); err != nil {
		_ = client.Disconnect(context.Background())
		return nil, fmt.Errorf("ping database %s: %w", engine.RedactURI(cfg.URI), err)
	}
	return &Engine{client: client, db: client.Database(cfg.Name), log: log}, nil
}

func (e *Engine) Name() string { return "mongodb" }

func (e *Engine) Ping(ctx context.Context) error { return e.client.Ping(ctx, readpref.Primary()) }

func (e *Engine) Close(ctx context.Context) error { return e.client.Disconnect(ctx) }

// DropDatabase drops the engine's database (docstore.DB.DropDatabase).
func (e *Engine) DropDatabase(ctx context.Context) error { return e.db.Drop(ctx) }

func (e *Engine) Collections(ctx context.Context) ([]string, error) {
	names, err := e.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	sort.Strings(names)
	return names, nil
}

// Collection creates the collection when it does not exist and the indexes of spec that do not exist yet. It
// lists the indexes first: FerretDB v1.24 (SQLite) panics on createIndexes for an index that already exists
// once the database has been reopened.
func (e *Engine) Collection(ctx context.Context, spec engine.Spec) (engine.Coll, error) {
	c := e.db.Collection(spec.Name)
	names, err := e.db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: spec.Name}})
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	if len(names) == 0 {
		// 48 NamespaceExists: another opener created it meanwhile.
		var se mongo.ServerError
		if err := e.db.CreateCollection(ctx, spec.Name); err != nil && !(errors.As(err, &se) && se.HasErrorCode(48)) {
			return nil, fmt.Errorf("create collection %s: %w", spec.Name, err)
		}
	}
	if len(spec.Indexes) > 0 {
		cur, err := c.Indexes().List(ctx)
		if err != nil {
			return nil, fmt.Errorf("list indexes of %s: %w", spec.Name, err)
		}
		var have []struct {
			Name string `bson:"name"`
		}
		if err := cur.All(ctx, &have); err != nil {
			return nil, fmt.Errorf("list indexes of %s: %w", spec.Name, err)
		}
		var models []mongo.IndexModel
		for _, ix := range spec.Indexes {
			if slices.ContainsFunc(have, func(h struct {
				Name string `bson:"name"`
			}) bool {
				return h.Name == ix.Name
			}) {
				continue
			}
			keys := make(bson.D, 0, len(ix.Keys))
			for _, k := range ix.Keys {
				dir := 1
				if k.Desc {
					dir = -1
				}
				keys = append(keys, bson.E{Key: k.Path, Value: dir})
			}
			models = append(models, mongo.IndexModel{Keys: keys,
				Options: options.Index().SetName(ix.Name).SetUnique(ix.Unique)})
		}
		if len(models) > 0 {
			if _, err := c.Indexes().CreateMany(ctx, models); err != nil {
				if isMongoDup(err) {
					err = fmt.Errorf("%w: %w", engine.ErrDuplicate, err)
				}
				return nil, fmt.Errorf("create indexes of %s: %w", spec.Name, err)
			}
		}
	}
	arrays := make(map[string]bool, len(spec.Arrays))
	for _, a := range spec.Arrays {
		arrays[a] = true
	}
	return &coll{c: c, arrays: arrays}, nil
}

type coll struct {
	c      *mongo.Collection
	arrays map[string]bool
}

// InsertAll inserts the documents one after the other, in order (no transaction: a reader may see the first
// before the last); a duplicate is that document's result, any other error stops the call.
func (e *Engine) InsertAll(ctx context.Context, ins []engine.Insertion) ([]error, error) {
	res := make([]error, len(ins))
	for i, in := range ins {
		if err := in.Coll.Insert(ctx, in.ID, in.JSON); err != nil {
			if !errors.Is(err, engine.ErrDuplicate) {
				return nil, err
			}
			res[i] = err
		}
	}
	return res, nil
}

func (m *coll) Insert(ctx context.Context, id string, doc []byte) error {
	d, err := jsonToBSON(doc)
	if err != nil {
		return err
	}
	if _, err := m.c.InsertOne(ctx, d); err != nil {
		return mongoErr(err)
	}
	return nil
}

func (m *coll) InsertMany(ctx context.Context, docs []engine.Raw) ([]error, error) {
	ds := make([]any, len(docs))
	for i, r := range docs {
		d, err := jsonToBSON(r.JSON)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		ds[i] = d
	}
	res := make([]error, len(docs))
	_, err := m.c.InsertMany(ctx, ds, options.InsertMany().SetOrdered(false))
	if err == nil {
		return res, nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) == 0 || bwe.WriteConcernError != nil {
		return nil, mongoErr(err)
	}
	for _, we := range bwe.WriteErrors {
		if we.Index < 0 || we.Index >= len(res) {
			return nil, mongoErr(err)
		}
		if we.HasErrorCode(11000) || we.HasErrorCode(11001) || we.HasErrorMessage("UNIQUE constraint failed") {
			res[we.Index] = fmt.Errorf("%w: %s", engine.ErrDuplicate, we.Message)
		} else {
			res[we.Index] = errors.New(we.Message)
		}
	}
	return res, nil
}

func (m *coll) Find(ctx context.Context, q engine.Query) ([][]byte, error) {
	opts := options.Find()
	if len(q.Sort) > 0 {
		opts.SetSort(mongoSort(q.Sort))
	}
	if q.Offset > 0 {
		opts.SetSkip(int64(q.Offset))
	}
	if q.Limit > 0 {
		opts.SetLimit(int64(q.Limit))
	}
	if len(q.Fields) > 0 {
		p := make(bson.D, 0, len(q.Fields)+1)
		p = append(p, bson.E{Key: "_id", Value: 1})
		for _, f := range q.Fields {
			if f != "_id" {
				p = append(p, bson.E{Key: f, Value: 1})
			}
		}
		opts.SetProjection(p)
	}
	cur, err := m.c.Find(ctx, mongoFilter(q.Filter), opts)
	if err != nil {
		return nil, mongoErr(err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var out [][]byte
	if q.Limit > 0 {
		out = make([][]byte, 0, min(q.Limit, 1024))
	}
	for cur.Next(ctx) {
		b, err := bsonToJSON(nil, cur.Current)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if err := cur.Err(); err != nil {
		return nil, mongoErr(err)
	}
	return out, nil
}

func (m *coll) Count(ctx context.Context, f search.Node) (int64, error) {
	n, err := m.c.CountDocuments(ctx, mongoFilter(f))
	if err != nil {
		return 0, mongoErr(err)
	}
	return n, nil
}

func (m *coll) Update(ctx context.Context, f search.Node, u []engine.Op, many, upsert bool) (int64, error) {
	var (
		res *mongo.UpdateResult
		err error
	)
	if many {
		res, err = m.c.UpdateMany(ctx, mongoFilter(f), mongoUpdate(u), options.UpdateMany().SetUpsert(upsert))
	} else {
		res, err = m.c.UpdateOne(ctx, mongoFilter(f), mongoUpdate(u), options.UpdateOne().SetUpsert(upsert))
	}
	if err != nil {
		return 0, mongoErr(err)
	}
	return res.MatchedCount + res.UpsertedCount, nil
}

func (m *coll) FindOneAndUpdate(ctx context.Context, f search.Node, sort []search.SortKey, u []engine.Op, opts engine.FindAndUpdate) ([]byte, error) {
	o := options.FindOneAndUpdate().SetUpsert(opts.Upsert).SetReturnDocument(options.After)
	if opts.ReturnBefore {
		o.SetReturnDocument(options.Before)
	}
	if len(sort) > 0 {
		o.SetSort(mongoSort(sort))
	}
	raw, err := m.c.FindOneAndUpdate(ctx, mongoFilter(f), mongoUpdate(u), o).Raw()
	if err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, engine.ErrNotFound
		}
		return nil, mongoErr(err)
	}
	return bsonToJSON(nil, raw)
}

func (m *coll) Replace(ctx context.Context, id string, doc []byte, upsert bool) (bool, error) {
	d, err := jsonToBSON(doc)
	if err != nil {
		return false, err
	}
	res, err := m.c.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, d, options.Replace().SetUpsert(upsert))
	if err != nil {
		return false, mongoErr(err)
	}
	return res.MatchedCount+res.UpsertedCount > 0, nil
}

func (m *coll) Delete(ctx context.Context, f search.Node, many bool) (int64, error) {
	var (
		res *mongo.DeleteResult
		err error
	)
	if many {
		res, err = m.c.DeleteMany(ctx, mongoFilter(f))
	} else {
		res, err = m.c.DeleteOne(ctx, mongoFilter(f))
	}
	if err != nil {
		return 0, mongoErr(err)
	}
	return res.DeletedCount, nil
}

// GroupCount is $match, $unwind for an array path, $group, $sort by count descending then value, $limit.
// FerretDB v1 only takes $unwind's short form, which drops the documents without elements (path missing, null
// or an empty array): a second count gives their group, null. (An array holding null elements is not
// supported: its document would count twice in the null group. Stores never write one.)
func (m *coll) GroupCount(ctx context.Context, f search.Node, path string, limit int) ([]engine.Group, error) {
	match := mongoFilter(f)
	pipe := bson.A{bson.D{{Key: "$match", Value: match}}}
	if m.arrays[path] {
		pipe = append(pipe, bson.D{{Key: "$unwind", Value: "$" + path}})
	}
	pipe = append(pipe,
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$" + path}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
		bson.D{{Key: "$sort", Value: bson.D{{Key: "n", Value: -1}, {Key: "_id", Value: 1}}}})
	if limit > 0 {
		pipe = append(pipe, bson.D{{Key: "$limit", Value: int64(limit)}})
	}
	cur, err := m.c.Aggregate(ctx, pipe)
	if err != nil {
		return nil, mongoErr(err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var out []engine.Group
	for cur.Next(ctx) {
		g := engine.Group{Value: bsonValue(cur.Current.Lookup("_id"))}
		n, ok := cur.Current.Lookup("n").AsInt64OK()
		if !ok {
			return nil, fmt.Errorf("group count: unexpected count %s", cur.Current.Lookup("n"))
		}
		g.Count = n
		out = append(out, g)
	}
	if err := cur.Err(); err != nil {
		return nil, mongoErr(err)
	}
	if !m.arrays[path] {
		return out, nil
	}
	none := bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: path, Value: nil}},
		bson.D{{Key: path, Value: bson.D{{Key: "$size", Value: 0}}}},
	}}}
	if len(match) > 0 {
		none = bson.D{{Key: "$and", Value: bson.A{match, none}}}
	}
	n, err := m.c.CountDocuments(ctx, none)
	if err != nil {
		return nil, mongoErr(err)
	}
	if n == 0 {
		return out, nil
	}
	i := slices.IndexFunc(out, func(g engine.Group) bool { return g.Value == nil })
	if i >= 0 {
		out[i].Count += n
	} else {
		out = append(out, engine.Group{Value: nil, Count: n})
	}
	slices.SortStableFunc(out, func(a, b engine.Group) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		return engine.Compare(a.Value, b.Value)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// mongoErr wraps engine.ErrDuplicate around a unique-key violation.
func mongoErr(err error) error {
	if isMongoDup(err) {
		return fmt.Errorf("%w: %w", engine.ErrDuplicate, err)
	}
	return err
}

// isMongoDup reports whether err is a unique-index violation. FerretDB 1.24 reports one raised by an update as
// an InternalError carrying SQLite's UNIQUE constraint message (extended code 2067).
func isMongoDup(err error) bool {
	if err == nil {
		return false
	}
	if mongo.IsDuplicateKeyError(err) {
		return true
	}
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorMessage("UNIQUE constraint failed")
}

// mongoFilter translates a filter tree into a MongoDB query document. It only uses operators that both MongoDB
// and FerretDB v1.24 support: $and, $or, $nor, $eq, $gt, $gte, $lt, $lte, $in, $exists, $ne and $regex. The
// keys are the operators and the nodes' paths, which come from code and allow-lists; values only ever appear
// as values, and user text in a text operator is quoted (see engine.Quote).
//
// OpAll, and an OpAnd without children, give the empty document (everything); an OpOr without children and an
// OpIn without values match nothing. OpNot is {$nor: [child]}; OpExists is {path: {$exists: true, $ne: null}}.
// An equality with a scalar is written {path: v} (what MongoDB and FerretDB take as an equality of an upsert).
func mongoFilter(n search.Node) bson.D {
	switch n.Op {
	case search.OpAll:
		return bson.D{}
	case search.OpAnd:
		if len(n.Children) == 0 {
			return bson.D{}
		}
		if len(n.Children) == 1 {
			return mongoFilter(n.Children[0])
		}
		a := mongoFilters(n.Children)
		if d, ok := mergeAnd(a); ok {
			return d
		}
		return bson.D{{Key: "$and", Value: a}}
	case search.OpOr:
		if len(n.Children) == 0 {
			return mongoNothing()
		}
		return bson.D{{Key: "$or", Value: mongoFilters(n.Children)}}
	case search.OpNot:
		if len(n.Children) == 0 {
			return mongoNothing() // not(everything)
		}
		return bson.D{{Key: "$nor", Value: mongoFilters(n.Children)}}
	case search.OpEq:
		switch n.Value.(type) {
		case map[string]any, []any:
			return mongoField(n.Path, "$eq", toBSON(n.Value))
		}
		return bson.D{{Key: n.Path, Value: toBSON(n.Value)}}
	case search.OpGt:
		return mongoField(n.Path, "$gt", toBSON(n.Value))
	case search.OpGte:
		return mongoField(n.Path, "$gte", toBSON(n.Value))
	case search.OpLt:
		return mongoField(n.Path, "$lt", toBSON(n.Value))
	case search.OpLte:
		return mongoField(n.Path, "$lte", toBSON(n.Value))
	case search.OpIn:
		vals := make(bson.A, 0, len(n.Values))
		for _, v := range n.Values {
			vals = append(vals, toBSON(v))
		}
		return mongoField(n.Path, "$in", vals)
	case search.OpExists:
		return bson.D{{Key: n.Path, Value: bson.D{{Key: "$exists", Value: true}, {Key: "$ne", Value: nil}}}}
	case search.OpLike:
		return mongoRegex(n.Path, engine.Quote(engine.Text(n.Value)), "is")
	case search.OpWildcard:
		return mongoRegex(n.Path, `^`+engine.Wildcard(engine.Text(n.Value))+`\z`, "is")
	case search.OpPrefix:
		return mongoRegex(n.Path, `^`+engine.Quote(engine.Text(n.Value)), "")
	case search.OpSuffix:
		return mongoRegex(n.Path, engine.Quote(engine.Text(n.Value))+`\z`, "")
	}
	return mongoNothing()
}

// mergeAnd returns the conditions of an $and as one document when each is on a path of its own: MongoDB and
// FerretDB then take its equalities as the fields of an upserted document (FerretDB does not look into $and).
func mergeAnd(a bson.A) (bson.D, bool) {
	d := make(bson.D, 0, len(a))
	for _, c := range a {
		cd := c.(bson.D)
		if len(cd) != 1 || strings.HasPrefix(cd[0].Key, "$") || slices.ContainsFunc(d, func(e bson.E) bool { return e.Key == cd[0].Key }) {
			return nil, false
		}
		d = append(d, cd[0])
	}
	return d, true
}

func mongoFilters(nodes []search.Node) bson.A {
	a := make(bson.A, 0, len(nodes))
	for _, c := range nodes {
		a = append(a, mongoFilter(c))
	}
	return a
}

// mongoField returns {path: {op: v}}.
func mongoField(path, op string, v any) bson.D {
	return bson.D{{Key: path, Value: bson.D{{Key: op, Value: v}}}}
}

// mongoNothing returns a filter no document matches.
func mongoNothing() bson.D { return mongoField("_id", "$in", bson.A{}) }

// mongoRegex returns {path: {$regex: pattern, $options: opts}}.
func mongoRegex(path, pattern, opts string) bson.D {
	r := bson.D{{Key: "$regex", Value: pattern}}
	if opts != "" {
		r = append(r, bson.E{Key: "$options", Value: opts})
	}
	return bson.D{{Key: path, Value: r}}
}

// mongoSort translates sort keys into a sort document.
func mongoSort(keys []search.SortKey) bson.D {
	d := make(bson.D, 0, len(keys))
	for _, k := range keys {
		dir := 1
		if k.Desc {
			dir = -1
		}
		d = append(d, bson.E{Key: k.Path, Value: dir})
	}
	return d
}

// mongoUpdate translates an update: $set, $unset, $inc, $addToSet with $each, and $pullAll (MongoDB's
// equivalent of $pull with $in for values, which FerretDB v1 ignores).
func mongoUpdate(u []engine.Op) bson.D {
	var set, unset, inc, add, pull bson.D
	for _, op := range u {
		switch op.Kind {
		case engine.OpSet:
			set = append(set, bson.E{Key: op.Path, Value: toBSON(op.Value)})
		case engine.OpUnset:
			unset = append(unset, bson.E{Key: op.Path, Value: ""})
		case engine.OpInc:
			inc = append(inc, bson.E{Key: op.Path, Value: toBSON(op.Value)})
		case engine.OpAddToSet:
			add = append(add, bson.E{Key: op.Path, Value: bson.D{{Key: "$each", Value: toBSONArray(op.Items)}}})
		case engine.OpPull:
			pull = append(pull, bson.E{Key: op.Path, Value: toBSONArray(op.Items)})
		}
	}
	var d bson.D
	for _, p := range []struct {
		op string
		d  bson.D
	}{{"$set", set}, {"$unset", unset}, {"$inc", inc}, {"$addToSet", add}, {"$pullAll", pull}} {
		if len(p.d) > 0 {
			d = append(d, bson.E{Key: p.op, Value: p.d})
		}
	}
	return d
}

// toBSON returns a normalized value (see engine.Normalize) as the driver encodes it: objects as documents with their
// keys sorted (a map has no order, and MongoDB compares documents key by key).
func toBSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := make(bson.D, len(keys))
		for i, k := range keys {
			d[i] = bson.E{Key: k, Value: toBSON(x[k])}
		}
		return d
	case []any:
		return toBSONArray(x)
	}
	return v
}

func toBSONArray(vs []any) bson.A {
	a := make(bson.A, len(vs))
	for i, v := range vs {
		a[i] = toBSON(v)
	}
	return a
}

// jsonToBSON decodes a JSON object into a document in its key order, with integral numbers as int64 and the
// others as doubles.
func jsonToBSON(b []byte) (bson.D, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("document is not a JSON object: %w", err)
	}
	if tok != json.Delim('{') {
		return nil, errors.New("document is not a JSON object")
	}
	d, err := jsonObject(dec)
	if err != nil {
		return nil, fmt.Errorf("document is not a JSON object: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("document is not a single JSON object")
	}
	return d, nil
}

// jsonObject reads the members of an object whose "{" has been read, and its "}".
func jsonObject(dec *json.Decoder) (bson.D, error) {
	d := bson.D{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := tok.(string)
		if !ok {
			return nil, errors.New("object key is not a string")
		}
		v, err := jsonValue(dec)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: k, Value: v})
	}
	if _, err := dec.Token(); err != nil { // "}"
		return nil, err
	}
	return d, nil
}

func jsonValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return jsonObject(dec)
		case '[':
			a := bson.A{}
			for dec.More() {
				v, err := jsonValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil { // "]"
				return nil, err
			}
			return a, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		return bsonNumber(t)
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// bsonNumber returns a JSON number as it is stored: an int64 when it is an integer that fits, a decimal128 when
// it is a larger integer (exact up to 34 digits: a double would round 18446744073709551615 to
// 18446744073709551616), a double otherwise. An integer of more than 34 significant digits is an error, since
// MongoDB cannot keep it as written.
func bsonNumber(n json.Number) (any, error) {
	v := engine.Number(n)
	if _, ok := v.(float64); !ok || strings.ContainsAny(string(n), ".eE") {
		return v, nil
	}
	d, err := bson.ParseDecimal128(string(n))
	if err != nil {
		return nil, fmt.Errorf("integer %s: more digits than MongoDB keeps exactly (34)", n)
	}
	return d, nil
}

// bsonToJSON appends the JSON of a document: what encoding/json would write for the same values, so that the
// stores' structs decode it. Int32 and int64 are plain integers; doubles are written as encoding/json writes a
// float64 (an integral double without a fraction); dates as RFC 3339 strings, object ids as hex strings,
// binaries as base64 strings, decimals as numbers (integral ones with all their digits); other BSON types as their relaxed extended JSON.
func bsonToJSON(dst []byte, doc bson.Raw) ([]byte, error) {
	elems, err := doc.Elements()
	if err != nil {
		return nil, fmt.Errorf("read document: %w", err)
	}
	dst = append(dst, '{')
	for i, e := range elems {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, e.Key())
		dst = append(dst, ':')
		if dst, err = appendJSONValue(dst, e.Value()); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

func appendJSONValue(dst []byte, v bson.RawValue) ([]byte, error) {
	switch v.Type {
	case bson.TypeNull, bson.TypeUndefined:
		return append(dst, "null"...), nil
	case bson.TypeBoolean:
		return strconv.AppendBool(dst, v.Boolean()), nil
	case bson.TypeString:
		return appendJSONString(dst, v.StringValue()), nil
	case bson.TypeInt32:
		return strconv.AppendInt(dst, int64(v.Int32()), 10), nil
	case bson.TypeInt64:
		return strconv.AppendInt(dst, v.Int64(), 10), nil
	case bson.TypeDouble:
		return appendJSONFloat(dst, v.Double()), nil
	case bson.TypeEmbeddedDocument:
		return bsonToJSON(dst, v.Document())
	case bson.TypeArray:
		vals, err := v.Array().Values()
		if err != nil {
			return nil, fmt.Errorf("read array: %w", err)
		}
		dst = append(dst, '[')
		for i, e := range vals {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendJSONValue(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case bson.TypeDateTime:
		return appendJSONString(dst, v.Time().UTC().Format(time.RFC3339Nano)), nil
	case bson.TypeObjectID:
		return appendJSONString(dst, v.ObjectID().Hex()), nil
	case bson.TypeBinary:
		_, data := v.Binary()
		return appendJSONString(dst, base64.StdEncoding.EncodeToString(data)), nil
	case bson.TypeDecimal128:
		// An integer (as bsonNumber stores one) is written with all its digits, as it was written.
		if bi, exp, err := v.Decimal128().BigInt(); err == nil && exp >= 0 {
			if exp > 0 {
				bi.Mul(bi, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(exp)), nil))
			}
			return bi.Append(dst, 10), nil
		}
		s := v.Decimal128().String()
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return append(dst, "null"...), nil
		}
		return append(dst, s...), nil
	}
	b, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, false, false)
	if err != nil {
		return nil, fmt.Errorf("read value: %w", err)
	}
	var w struct{ V json.RawMessage }
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("read value: %w", err)
	}
	return append(dst, w.V...), nil
}

// appendJSONFloat writes f as encoding/json writes a float64 (NaN and infinities, which JSON lacks, as null).
func appendJSONFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	abs := math.Abs(f)
	fmtc := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmtc = 'e'
	}
	dst = strconv.AppendFloat(dst, f, fmtc, -1, 64)
	if fmtc == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendJSONString writes s as a JSON string (invalid UTF-8 as U+FFFD).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// bsonValue returns a scalar BSON value as the neutral Go value: nil, bool, int64, float64, string; documents
// and arrays through their JSON.
func bsonValue(v bson.RawValue) any {
	switch v.Type {
	case 0, bson.TypeNull, bson.TypeUndefined:
		return nil
	case bson.TypeBoolean:
		return v.Boolean()
	case bson.TypeString:
		return v.StringValue()
	case bson.TypeInt32:
		return int64(v.Int32())
	case bson.TypeInt64:
		return v.Int64()
	case bson.TypeDouble:
		return v.Double()
	}
	b, err := appendJSONValue(nil, v)
	if err != nil {
		return nil
	}
	return engine.DecodeValue(b)
}

// DropIndex drops the index named name; one that does not exist (or a collection that does not) is not an error.
func (m *coll) DropIndex(ctx context.Context, name string) error {
	err := m.c.Indexes().DropOne(ctx, name)
	var ce mongo.CommandError
	if errors.As(err, &ce) && (ce.Code == 27 || ce.Name == "IndexNotFound" || ce.Code == 26) { // no such index, or collection
		return nil
	}
	return err
}
