package docstore

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// groupDB opens an SQLite database with a collection "g" (unique index on n) holding docs.
func groupDB(t *testing.T, docs ...map[string]any) (*sqliteEngine, *Collection) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, Config{Name: "group", Path: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	c, err := db.Collection(ctx, Spec{Name: "g", Indexes: []Index{{Name: "n", Keys: []Key{Asc("n")}, Unique: true}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if err := c.Insert(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	return db.eng.(*sqliteEngine), c
}

// queued waits until n write requests are queued (the test holds the write connection meanwhile).
func queued(t *testing.T, e *sqliteEngine, n int) {
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
		{"insert c", func() error { return c.Insert(ctx, map[string]any{"_id": "c", "n": 3}) }},
		{"insert duplicate a", func() error { return c.Insert(ctx, map[string]any{"_id": "a", "n": 50}) }},
		{"insert d", func() error { return c.Insert(ctx, map[string]any{"_id": "d", "n": 4}) }},
		// Both x documents get n=7: the second one breaks the unique index after the first was changed.
		{"update many, fails half-way", func() error {
			_, err := c.UpdateMany(ctx, Eq("k", "x"), Set("n", 7))
			return err
		}},
		{"inc ctr", func() error {
			var d map[string]any
			return c.FindOneAndUpdate(ctx, ID("ctr"), nil, Inc("v", 1), FindAndUpdate{}, &d)
		}},
		{"delete b", func() error {
			ok, err := c.DeleteOne(ctx, ID("b"))
			if err == nil && !ok {
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
		case wantErr && !IsDuplicate(o.err):
			t.Errorf("%s: %v, want a duplicate-key error", o.name, o.err)
		case !wantErr && o.err != nil:
			t.Errorf("%s: %v", o.name, o.err)
		}
	}
	if g := e.groups.Load() - groupsBefore; g != 1 {
		t.Errorf("%d group commits, want the 6 writes in 1", g)
	}
	var docs []map[string]any
	if err := c.Find(ctx, Query{Filter: All(), Sort: Sort("_id")}, &docs); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, d := range docs {
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
	go func() { errs <- c.Insert(cctx, map[string]any{"_id": "cancelled", "n": 1}) }()
	queued(t, e, 1)
	go func() { errs <- c.Insert(context.Background(), map[string]any{"_id": "kept", "n": 2}) }()
	queued(t, e, 2)
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled insert returned %v", err)
	}
	e.release()
	if err := <-errs; err != nil {
		t.Fatalf("the other insert: %v", err)
	}
	var d map[string]any
	if err := c.Get(context.Background(), "cancelled", &d); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the cancelled insert was stored: %v %v", d, err)
	}
	if err := c.Get(context.Background(), "kept", &d); err != nil {
		t.Fatal(err)
	}
}
