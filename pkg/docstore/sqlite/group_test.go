package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/pkg/docstore/internal/engine"
	"github.com/openir/platform/pkg/search"
)

// groupDB opens an SQLite database with a collection "g" (unique index on n) holding docs. The tests drive the
// engine's collection directly (pkg/docstore, which opens engines, imports this package).
func groupDB(t *testing.T, docs ...map[string]any) (*Engine, engine.Coll) {
	t.Helper()
	ctx := context.Background()
	e, err := Open(ctx, engine.Config{Name: "group", Path: t.TempDir()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	c, err := e.Collection(ctx, engine.Spec{Name: "g", Indexes: []engine.Index{{Name: "n", Keys: []engine.Key{{Path: "n"}}, Unique: true}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if err := insert(ctx, c, d); err != nil {
			t.Fatal(err)
		}
	}
	return e, c
}

// insert stores d (which holds a string _id) as docstore's Collection.Insert does.
func insert(ctx context.Context, c engine.Coll, d map[string]any) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	return c.Insert(ctx, d["_id"].(string), b)
}

func eq(path string, v any) search.Node { return search.Node{Op: search.OpEq, Path: path, Value: v} }

// queued waits until n write requests are queued (the test holds the write connection meanwhile).
func queued(t *testing.T, e *Engine, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		e.wq.mu.Lock()
		k := len(e.wq.pending)
		e.wq.mu.Unlock()
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d write requests queued after 30 s, want %d", k, n)
		}
		runtime.Gosched()
	}
}

// Writes queued while the connection is busy commit together, and each gets its own outcome: a duplicate
// insert and an update that fails half-way are undone alone (the update's first change included), the others
// are stored.
func TestSQLiteGroupCommit_EachWriteItsOwnOutcome(t *testing.T) {
	e, c := groupDB(t, map[string]any{"_id": "a", "n": 1, "k": "x"}, map[string]any{"_id": "b", "n": 2, "k": "x"},
		map[string]any{"_id": "ctr", "n": 100, "v": 0})
	ctx := context.Background()
	e.wr.sem <- struct{}{} // hold the connection: every write below queues
	groupsBefore := e.groups.Load()
	type outcome struct {
		name string
		err  error
	}
	writes := []struct {
		name string
		fn   func() error
	}{
		{"insert c", func() error { return insert(ctx, c, map[string]any{"_id": "c", "n": 3}) }},
		{"insert duplicate a", func() error { return insert(ctx, c, map[string]any{"_id": "a", "n": 50}) }},
		{"insert d", func() error { return insert(ctx, c, map[string]any{"_id": "d", "n": 4}) }},
		// Both x documents get n=7: the second one breaks the unique index after the first was changed.
		{"update many, fails half-way", func() error {
			_, err := c.Update(ctx, eq("k", "x"), []engine.Op{{Kind: engine.OpSet, Path: "n", Value: int64(7)}}, true, false)
			return err
		}},
		{"inc ctr", func() error {
			_, err := c.FindOneAndUpdate(ctx, eq("_id", "ctr"), nil, []engine.Op{{Kind: engine.OpInc, Path: "v", Value: int64(1)}}, engine.FindAndUpdate{})
			return err
		}},
		{"delete b", func() error {
			n, err := c.Delete(ctx, eq("_id", "b"), false)
			if err == nil && n == 0 {
				err = errors.New("b not deleted")
			}
			return err
		}},
	}
	out := make(chan outcome, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes { // queued in this order
		wg.Go(func() { out <- outcome{w.name, w.fn()} })
		queued(t, e, i+1)
	}
	e.release()
	wg.Wait()
	close(out)
	for o := range out {
		wantErr := o.name == "insert duplicate a" || o.name == "update many, fails half-way"
		switch {
		case wantErr && !errors.Is(o.err, engine.ErrDuplicate):
			t.Errorf("%s: %v, want a duplicate-key error", o.name, o.err)
		case !wantErr && o.err != nil:
			t.Errorf("%s: %v", o.name, o.err)
		}
	}
	if g := e.groups.Load() - groupsBefore; g != 1 {
		t.Errorf("%d group commits, want the 6 writes in 1", g)
	}
	raws, err := c.Find(ctx, engine.Query{Filter: search.Node{Op: search.OpAll}, Sort: []search.SortKey{{Path: "_id"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, raw := range raws {
		var d map[string]any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		got[d["_id"].(string)] = d["n"]
		if d["_id"] == "ctr" && d["v"] != float64(1) {
			t.Errorf("ctr v = %v, want 1", d["v"])
		}
	}
	want := map[string]any{"a": float64(1), "c": float64(3), "d": float64(4), "ctr": float64(100)}
	if len(got) != len(want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("stored %v, want %v", got, want)
			break
		}
	}
}

// A write whose context ends while it waits for the connection is not run, and does not hold up the others.
func TestSQLiteGroupCommit_CancelledWhileQueued(t *testing.T) {
	e, c := groupDB(t)
	e.wr.sem <- struct{}{}
	cctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { errs <- insert(cctx, c, map[string]any{"_id": "cancelled", "n": 1}) }()
	queued(t, e, 1)
	go func() { errs <- insert(context.Background(), c, map[string]any{"_id": "kept", "n": 2}) }()
	queued(t, e, 2)
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled insert returned %v", err)
	}
	e.release()
	if err := <-errs; err != nil {
		t.Fatalf("the other insert: %v", err)
	}
	if d, err := c.Find(context.Background(), engine.Query{Filter: eq("_id", "cancelled"), Limit: 1}); err != nil || len(d) != 0 {
		t.Fatalf("the cancelled insert was stored: %s %v", d, err)
	}
	if d, err := c.Find(context.Background(), engine.Query{Filter: eq("_id", "kept"), Limit: 1}); err != nil || len(d) != 1 {
		t.Fatalf("the other insert was not stored: %s %v", d, err)
	}
}
