package benchkit

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/docstore/mongotest"
)

func TestMain(m *testing.M) { mongotest.Main(m) }

func TestMongoFromEnv(t *testing.T) {
	for _, c := range []struct {
		name, uri string
		nil, err  bool
	}{
		{name: "unset", uri: "", nil: true},
		{name: "mongodb", uri: "mongodb://localhost:27017/"},
		{name: "srv", uri: "mongodb+srv://cluster.example.net/"},
		{name: "not a mongodb URI", uri: "postgres://localhost/", nil: true, err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(MongoEnv, c.uri)
			m, err := MongoFromEnv()
			if (err != nil) != c.err || (m == nil) != c.nil {
				t.Fatalf("MongoFromEnv: %v, %v", m, err)
			}
		})
	}
}

// The MongoDB pass: rows and phases are marked, each name gets a database of its own on the server, and
// the pass drops them all when it ends.
func TestRun_Passes(t *testing.T) {
	t.Setenv(MongoEnv, mongotest.Config(t).URI)
	b, err := NewRun(RunOptions{Program: "benchkit-test"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Cleanup()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var names []string
	err = b.Passes(ctx, func() error {
		cfg := b.DB(t.TempDir(), "phase")
		names = append(names, cfg.Name)
		db, err := docstore.Open(ctx, cfg, nil)
		if err != nil {
			return err
		}
		defer db.Close(ctx)
		c, err := db.Collection(ctx, docstore.Spec{Name: "things"})
		if err != nil {
			return err
		}
		if err := c.Insert(ctx, map[string]any{"_id": "a", "n": 1}); err != nil {
			return err
		}
		return b.Phase("phase", func() error {
			b.Add(TimeKind, "1 section", "metric", "ms", 2, 1, "floor", "")
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Rows) != 2 || b.Rows[0].Section != "1 section" || b.Rows[1].Section != "1 section (MongoDB)" ||
		b.Phases[1].Name != "phase (MongoDB)" || b.Engine != "" {
		t.Errorf("rows %+v, phases %+v, engine %q", b.Rows, b.Phases, b.Engine)
	}
	if len(names) != 2 || names[0] != "phase" || !strings.HasPrefix(names[1], "bench_") || !strings.HasSuffix(names[1], "_phase") {
		t.Fatalf("database names %v", names)
	}
	db, err := docstore.Open(ctx, docstore.Config{URI: b.Mongo.URI, Name: names[1]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	if cs, err := db.Collections(ctx); err != nil || len(cs) != 0 {
		t.Errorf("after the pass, the database holds %v (%v)", cs, err)
	}
}
