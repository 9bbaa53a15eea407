package authstore

import (
	"context"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openir/platform/pkg/auth"
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/docstoretest"
	"github.com/openir/platform/pkg/docstore/mongotest"
	"github.com/openir/platform/pkg/search"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

// twoStores returns two handles on one database: the same handle twice on SQLite (the embedded engine is
// single node: a second service cannot open the file), two clients on MongoDB, as two replicas have. The
// embedded FerretDB stand-in gets one client: its findAndModify is not atomic between two clients (measured:
// 8 to 10 conditional increments pass a limit of 5), which MongoDB guarantees for one document; set
// MONGOTEST_URI to run the two-client case on a real MongoDB.
var twoStores = []struct {
	name string
	open func(t *testing.T) (*docstore.DB, *docstore.DB)
}{
	{"sqlite", func(t *testing.T) (*docstore.DB, *docstore.DB) { db := docstoretest.New(t); return db, db }},
	{"mongodb", func(t *testing.T) (*docstore.DB, *docstore.DB) {
		cfg := mongotest.Config(t)
		open := func() *docstore.DB {
			db, err := docstore.Open(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close(context.Background()) })
			return db
		}
		if mongotest.FerretDB() {
			db := open()
			return db, db
		}
		return open(), open()
	}},
}

// TestStoreCounter_ReplicasShareTheLimit: two throttles on one database (two replicas) given 40 parallel
// wrong passwords for one login from one address check at most the limit between them, and the per-address
// limit holds over logins the same way.
func TestStoreCounter_ReplicasShareTheLimit(t *testing.T) {
	for _, e := range twoStores {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			db1, db2 := e.open(t)
			var ths [2]*auth.Throttle
			for i, db := range []*docstore.DB{db1, db2} {
				c, err := NewStoreCounter(ctx, db, nil)
				if err != nil {
					t.Fatal(err)
				}
				ths[i] = auth.NewSharedThrottle(5, 12, time.Minute, c)
			}
			var checked atomic.Int32
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					a, ok, err := ths[i%2].Reserve(ctx, "bob", "10.0.0.1")
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						checked.Add(1)
						a.Failed(ctx)
					}
				}()
			}
			close(start)
			wg.Wait()
			if n := checked.Load(); n != 5 {
				t.Fatalf("two replicas checked %d passwords for one login, want exactly the limit 5", n)
			}
			// The address has 5 failures recorded; spraying other logins from it reaches the per-address limit 12.
			checked.Store(0)
			for i := range 30 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a, ok, err := ths[i%2].Reserve(ctx, "user"+string(rune('a'+i)), "10.0.0.1")
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						checked.Add(1)
						a.Failed(ctx)
					}
				}()
			}
			wg.Wait()
			if n := checked.Load(); n != 7 {
				t.Fatalf("spray over logins checked %d more passwords from the address, want 7 (12 in all)", n)
			}
			// Another address is not affected.
			if _, ok, err := ths[1].Reserve(ctx, "bob", "10.0.0.2"); err != nil || !ok {
				t.Fatalf("bob from another address: ok %v err %v", ok, err)
			}
		})
	}
}

// TestStoreCounter_WindowUntakeReset: the window expires, a given-back attempt is free again, a reset clears
// the key, and expired documents are swept.
func TestStoreCounter_WindowUntakeReset(t *testing.T) {
	for _, e := range twoStores {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := e.open(t)
			now := time.Unix(10000, 0)
			c, err := NewStoreCounter(ctx, db, func() time.Time { return now })
			if err != nil {
				t.Fatal(err)
			}
			take := func() bool {
				t.Helper()
				ok, err := c.Take(ctx, "k", 2, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if !take() || !take() || take() {
				t.Fatal("want two attempts then a refusal")
			}
			if err := c.Untake(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if !take() || take() {
				t.Fatal("an attempt given back is free once")
			}
			now = now.Add(time.Minute)
			if !take() || !take() || take() {
				t.Fatal("a new window allows the limit again")
			}
			if err := c.Reset(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if !take() {
				t.Fatal("a reset key is free")
			}
			// Expired documents go at the next sweep.
			now = now.Add(2 * time.Minute)
			if ok, err := c.Take(ctx, "other", 1, time.Second); err != nil || !ok {
				t.Fatalf("other: %v %v", ok, err)
			}
			coll, err := db.Collection(ctx, ThrottleCollection)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := coll.Count(ctx, docstore.All()); err != nil || n != 1 {
				t.Fatalf("documents after the sweep: %d (%v), want 1 (the expired key gone)", n, err)
			}
		})
	}
}

// TestStoreCounter_Plan: every query of the counter reads the primary key or the exp index (SQLite's plan).
func TestStoreCounter_Plan(t *testing.T) {
	ctx := context.Background()
	db := docstoretest.New(t)
	c, err := db.Collection(ctx, ThrottleCollection)
	if err != nil {
		t.Fatal(err)
	}
	ms := int64(1000)
	for _, f := range []search.Node{
		docstore.And(docstore.ID("x"), docstore.Gt("exp", ms), docstore.Lt("n", int64(5))),
		docstore.And(docstore.ID("x"), docstore.Lte("exp", ms)),
		docstore.And(docstore.ID("x"), docstore.Gt("n", int64(0))),
		docstore.Lte("exp", ms),
	} {
		plan, err := c.Explain(ctx, docstore.Query{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`(?m)^SCAN "?throttle"?( |$)`).MatchString(plan) {
			t.Errorf("a full scan of throttle:\n%s", plan)
		}
	}
}
