// Package mongotest gives each test its own database on one embedded FerretDB server per test binary (or on
// the MongoDB named by MONGOTEST_URI), so store and API tests run against a real database.
package mongotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/openir/platform/pkg/mongox"
)

// server is the one database server of this test binary, started on first use.
type server struct {
	once   sync.Once
	dir    string
	stop   func()
	client *mongo.Client
	err    error
}

var srv server // test-binary scope: one embedded server is shared by the package's tests

func (s *server) start() {
	uri := os.Getenv("MONGOTEST_URI")
	opts := options.Client().SetTimeout(30 * time.Second)
	if uri == "" {
		s.dir, s.err = os.MkdirTemp("", "mongotest-")
		if s.err != nil {
			return
		}
		var e *mongox.Embedded
		e, s.err = mongox.StartEmbedded(context.Background(), s.dir, nil)
		if s.err != nil {
			return
		}
		uri, s.stop = e.URI, e.Stop
		opts.SetMaxPoolSize(1)
	}
	s.client, s.err = mongo.Connect(opts.ApplyURI(uri))
}

// New returns a fresh, empty database dropped when the test ends.
func New(t testing.TB) *mongox.DB {
	t.Helper()
	srv.once.Do(srv.start)
	if srv.err != nil {
		t.Fatalf("mongotest: start database: %v", srv.err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := fmt.Sprintf("t_%s", hex.EncodeToString(b))
	db := srv.client.Database(name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = db.Drop(ctx)
	})
	return &mongox.DB{Database: db, Client: srv.client, Embedded: srv.stop != nil}
}

// Main runs the tests and then stops the embedded server and removes its files. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if srv.client != nil {
		_ = srv.client.Disconnect(context.Background())
	}
	if srv.stop != nil {
		srv.stop()
	}
	if srv.dir != "" {
		_ = os.RemoveAll(srv.dir)
	}
	os.Exit(code)
}
