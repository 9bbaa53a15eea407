package benchkit

// The MongoDB pass of both benchmark programs: with BENCH_MONGO_URI set, a program runs its phases a second
// time with the services on that MongoDB, each phase's database named for the run and dropped at the end.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openir/platform/pkg/docstore"
)

// MongoEnv names the MongoDB the programs also run on (a mongodb:// or mongodb+srv:// URI).
const MongoEnv = "BENCH_MONGO_URI"

// MongoEngine is the engine name of the MongoDB pass: its rows' sections and its phases end in " (MongoDB)".
const MongoEngine = "MongoDB"

// Mongo is the MongoDB of BENCH_MONGO_URI. Every database the run asks for gets a name of its own
// (bench_<random>_<name>), so runs sharing a server never meet, and Drop removes them all.
type Mongo struct {
	URI    string
	prefix string
	mu     sync.Mutex
	names  []string
}

// MongoFromEnv returns the MongoDB of BENCH_MONGO_URI, nil when the variable is unset or empty.
func MongoFromEnv() (*Mongo, error) {
	uri := os.Getenv(MongoEnv)
	if uri == "" {
		return nil, nil
	}
	if !strings.HasPrefix(uri, "mongodb://") && !strings.HasPrefix(uri, "mongodb+srv://") {
		return nil, fmt.Errorf("%s: want a mongodb:// or mongodb+srv:// URI", MongoEnv)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &Mongo{URI: uri, prefix: "bench_" + hex.EncodeToString(b) + "_"}, nil
}

// Config is the configuration of a fresh database for name on the MongoDB, remembered for Drop.
func (m *Mongo) Config(name string) docstore.Config {
	m.mu.Lock()
	defer m.mu.Unlock()
	full := m.prefix + name
	m.names = append(m.names, full)
	return docstore.Config{URI: m.URI, Name: full, OpTimeout: time.Minute}
}

// Drop drops every database Config named (also those a service process opened with that name).
func (m *Mongo) Drop(ctx context.Context) error {
	m.mu.Lock()
	names := m.names
	m.names = nil
	m.mu.Unlock()
	var errs []error
	for _, name := range names {
		db, err := docstore.Open(ctx, docstore.Config{URI: m.URI, Name: name}, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, db.DropDatabase(ctx), db.Close(ctx))
	}
	return errors.Join(errs...)
}

// Passes runs f on the embedded SQLite engine and then, with BENCH_MONGO_URI set, again on that MongoDB
// (b.Engine MongoEngine while it runs). The MongoDB pass's databases are dropped when it ends.
func (b *Run) Passes(ctx context.Context, f func() error) error {
	if err := f(); err != nil {
		return err
	}
	if b.Mongo == nil {
		return nil
	}
	b.Engine = MongoEngine
	defer func() { b.Engine = "" }()
	b.Logf("again on MongoDB (%s)", MongoEnv)
	err := f()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if derr := b.Mongo.Drop(dctx); derr != nil {
		err = errors.Join(err, fmt.Errorf("drop the MongoDB pass's databases: %w", derr))
	}
	return err
}

// OnMongo says whether the current pass runs on the MongoDB of BENCH_MONGO_URI.
func (b *Run) OnMongo() bool { return b.Engine == MongoEngine }

// DB is the database configuration of the current pass for name: the SQLite file dir/name.db, or on the
// MongoDB pass a fresh database of its own (dropped when the pass ends).
func (b *Run) DB(dir, name string) docstore.Config {
	if b.OnMongo() {
		return b.Mongo.Config(name)
	}
	return docstore.Config{Name: name, Path: dir}
}

// engineSuffix is what the current pass adds to sections and phases.
func (b *Run) engineSuffix() string {
	if b.Engine == "" {
		return ""
	}
	return " (" + b.Engine + ")"
}

// CheckMongoPass is the benchmark programs' test of a run with BENCH_MONGO_URI set: it reads the results
// written to path and checks that every row has a positive figure, and a positive floor and ratio unless it
// is of memSection; that no MongoDB row has an SQL floor; that each of sections has rows on SQLite and as
// many on MongoDB; and that memSection has no MongoDB rows (memory is measured once, on SQLite). It returns
// the number of rows of each section.
func CheckMongoPass(t testing.TB, path string, sections []string, memSection string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res Results
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	mongo := " (" + MongoEngine + ")"
	count := map[string]int{}
	for _, r := range res.Rows {
		count[r.Section]++
		if r.Figure <= 0 {
			t.Errorf("row %s / %s: figure %v", r.Section, r.Metric, r.Figure)
		}
		// A row made without a floor (a memory figure: no floor and no "floor is") is not compared.
		noFloor := r.Floor == nil && r.FloorWhat == ""
		if r.Section != memSection && !noFloor && (r.Floor == nil || *r.Floor <= 0 || r.Ratio == nil || *r.Ratio <= 0) {
			t.Errorf("row %s / %s: floor %v ratio %v", r.Section, r.Metric, r.Floor, r.Ratio)
		}
		if strings.HasSuffix(r.Section, mongo) && strings.Contains(r.FloorWhat, "SQL") {
			t.Errorf("row %s / %s: a SQL floor on MongoDB: %s", r.Section, r.Metric, r.FloorWhat)
		}
	}
	for _, s := range sections {
		if count[s] == 0 || count[s] != count[s+mongo] {
			t.Errorf("%s: %d rows on SQLite, %d on MongoDB", s, count[s], count[s+mongo])
		}
	}
	if count[memSection+mongo] != 0 {
		t.Errorf("%d memory rows on the MongoDB pass", count[memSection+mongo])
	}
	return count
}
