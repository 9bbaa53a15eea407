package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/openir/platform/pkg/docstore/internal/engine"
	"github.com/openir/platform/pkg/search"
)

// Tallies (engine.Spec.Tallies): a table per declared tally, "<collection>$tally_<name>" ('$' is refused in
// collection names, as MongoDB does, so no collection can take the name, and Collections leaves these tables
// out), with one row per distinct combination of its paths: for each path its value and its JSON type (the
// two expressions the filter translation tests: sqlExpr and json_type), and n, the number of documents
// with that combination. Triggers on the collection keep n in the transaction of every insert, delete and
// update of a document, so a tally is always exact. A Count whose filter tests only the tally's paths is the
// same condition written on those columns, summed: as many rows as combinations, whatever the size of the
// collection; a GroupCount by one of the paths sums them by that column.

// tally is one declared tally of a collection.
type tally struct {
	table string               // quoted
	cols  map[string]sqlTarget // the columns of each counted path (value, JSON type)
}

var errNotTallied = errors.New("docstore: a path of the filter is not tallied")

// tallySQL returns the statements that create the tally of spec and its triggers, in the order they run.
func tallySQL(coll string, t engine.Tally) (table string, stmts []string) {
	table = `"` + coll + "$tally_" + t.Name + `"`
	name := func(suffix string) string { return `"` + coll + "$tally_" + t.Name + "_" + suffix + `"` }
	var cols, vs, ts []string
	for i := range t.Paths {
		cols = append(cols, "v"+strconv.Itoa(i), "t"+strconv.Itoa(i))
		vs, ts = append(vs, "v"+strconv.Itoa(i)), append(ts, "t"+strconv.Itoa(i))
	}
	// The index has the values first: a string or number equality tests the value alone, so equalities on the
	// first paths and a range on the next one read one range of it.
	stmts = append(stmts,
		"CREATE TABLE "+table+" ("+strings.Join(cols, ",")+",n INTEGER NOT NULL)",
		"CREATE INDEX "+name("key")+" ON "+table+"("+strings.Join(append(vs, ts...), ",")+")")
	// vals are the expressions of a row of the collection (NEW or OLD); same is the condition "the tally row
	// of that combination" (IS: NULL, a missing or null value, is one value here).
	vals := func(row string) []string {
		var out []string
		for _, p := range t.Paths {
			out = append(out, "json_extract("+row+".doc,"+sqlPath(p)+")", "json_type("+row+".doc,"+sqlPath(p)+")")
		}
		return out
	}
	same := func(row string) string {
		var conds []string
		for i, v := range vals(row) {
			conds = append(conds, cols[i]+" IS "+v)
		}
		return strings.Join(conds, " AND ")
	}
	add := func(row string) string {
		return "INSERT INTO " + table + " SELECT " + strings.Join(vals(row), ",") + ",0 WHERE NOT EXISTS (SELECT 1 FROM " + table +
			" WHERE " + same(row) + "); UPDATE " + table + " SET n=n+1 WHERE " + same(row) + ";"
	}
	remove := func(row string) string {
		return "UPDATE " + table + " SET n=n-1 WHERE " + same(row) + "; DELETE FROM " + table + " WHERE n<=0 AND " + same(row) + ";"
	}
	var changed []string
	for i, o := range vals("OLD") {
		changed = append(changed, o+" IS NOT "+vals("NEW")[i])
	}
	tbl := `"` + coll + `"`
	stmts = append(stmts,
		"CREATE TRIGGER "+name("insert")+" AFTER INSERT ON "+tbl+" BEGIN "+add("NEW")+" END",
		"CREATE TRIGGER "+name("delete")+" AFTER DELETE ON "+tbl+" BEGIN "+remove("OLD")+" END",
		"CREATE TRIGGER "+name("update")+" AFTER UPDATE OF doc ON "+tbl+" WHEN "+strings.Join(changed, " OR ")+
			" BEGIN "+remove("OLD")+" "+add("NEW")+" END")
	return table, stmts
}

// ensureTally creates the tally t of the collection (in tx, the transaction that creates the collection),
// or rebuilds it when its definition changed, filling it from the documents stored. docstore checked the
// declaration (checkTallies).
func (c *coll) ensureTally(ctx context.Context, tx *wtx, t engine.Tally) (tally, error) {
	out := tally{cols: map[string]sqlTarget{}}
	for i, p := range t.Paths {
		out.cols[p] = sqlTarget{expr: "v" + strconv.Itoa(i), typ: "t" + strconv.Itoa(i)}
	}
	table, stmts := tallySQL(c.name, t)
	out.table = table
	if err := checkCollName(t.Name); err != nil { // control characters would not quote
		return tally{}, fmt.Errorf("tally: %w", err)
	}
	// The schema as SQLite keeps it: the table, its index and its three triggers.
	bare := strings.Trim(table, `"`)
	rows, err := tx.QueryContext(ctx, "SELECT sql FROM sqlite_schema WHERE name IN (?,?,?,?,?)",
		bare, bare+"_key", bare+"_insert", bare+"_delete", bare+"_update")
	if err != nil {
		return tally{}, err
	}
	var have []string
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return tally{}, err
		}
		have = append(have, s.String)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return tally{}, err
	}
	if sameSchema(have, stmts) {
		return out, nil
	}
	if len(have) > 0 {
		c.e.log.Info("rebuilding a changed tally", "collection", c.name, "tally", t.Name)
		for _, suffix := range []string{"insert", "delete", "update"} {
			if _, err := tx.ExecContext(ctx, `DROP TRIGGER IF EXISTS "`+bare+"_"+suffix+`"`); err != nil {
				return tally{}, err
			}
		}
		if _, err := tx.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
			return tally{}, err
		}
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return tally{}, fmt.Errorf("tally %s: %w", t.Name, err)
		}
	}
	// Fill it from what is stored (the triggers keep it from now on, in this same transaction).
	var sel []string
	for _, p := range t.Paths {
		sel = append(sel, sqlExpr(p), "json_type(doc,"+sqlPath(p)+")")
	}
	groups := make([]string, len(sel))
	for i := range sel {
		groups[i] = strconv.Itoa(i + 1)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+" SELECT "+strings.Join(sel, ",")+",count(*) FROM "+c.table+
		" GROUP BY "+strings.Join(groups, ",")); err != nil {
		return tally{}, fmt.Errorf("tally %s: fill: %w", t.Name, err)
	}
	return out, nil
}

// sameSchema tells whether the schema SQLite holds (table, index, triggers by name) is the one stmts create.
func sameSchema(have, stmts []string) bool {
	if len(have) != len(stmts) {
		return false
	}
	want := map[string]bool{}
	for _, s := range stmts {
		want[s] = true
	}
	for _, h := range have {
		if !want[h] {
			return false
		}
	}
	return true
}

// tallyWhere finds a tally that holds every path f tests and the given paths, and returns it with f written
// on its columns; ok is false when no tally has them all.
func (c *coll) tallyWhere(f search.Node, paths ...string) (t tally, where string, args []any, ok bool, err error) {
next:
	for _, t := range c.tallies {
		for _, p := range paths {
			if _, has := t.cols[p]; !has {
				continue next
			}
		}
		w := sqlWhere{arrays: c.arrays, cols: t.cols}
		w.node(f)
		if errors.Is(w.err, errNotTallied) {
			continue
		}
		if w.err != nil {
			return tally{}, "", nil, false, w.err
		}
		return t, w.b.String(), w.args, true, nil
	}
	return tally{}, "", nil, false, nil
}

// tallyCount counts the documents f matches from a tally whose paths are every path f tests; ok is false when
// no tally has them all.
func (c *coll) tallyCount(ctx context.Context, f search.Node) (n int64, ok bool, err error) {
	t, where, args, ok, err := c.tallyWhere(f)
	if !ok || err != nil {
		return 0, false, err
	}
	rows, err := c.e.query(ctx, "SELECT coalesce(sum(n),0) FROM "+t.table+" WHERE "+where, args...)
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, false, err
		}
	}
	return n, true, rows.Err()
}

// tallyGroups is the group query of GroupCount on a tally that holds path and every path f tests (the same
// groups, counts and order as over the documents: the value column groups as the value expression does, and
// the type column tells the bools); ok is false when no tally has them all.
func (c *coll) tallyGroups(f search.Node, path string) (s string, args []any, ok bool, err error) {
	t, where, args, ok, err := c.tallyWhere(f, path)
	if !ok || err != nil {
		return "", nil, false, err
	}
	col := t.cols[path]
	return "SELECT " + col.expr + ", sum(n), sum(CASE WHEN " + col.typ + " IN ('true','false') THEN n ELSE 0 END) FROM " + t.table +
		" WHERE " + where + " GROUP BY 1 ORDER BY 2 DESC, 1", args, true, nil
}
