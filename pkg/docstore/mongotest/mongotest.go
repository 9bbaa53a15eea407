// Package mongotest gives each test a fresh database of its own on the MongoDB engine of pkg/docstore: on one
// embedded FerretDB server per test binary, or on the MongoDB that MONGOTEST_URI names. It is a test helper:
// only tests import it, so FerretDB never reaches a service binary.
package mongotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/openir/platform/pkg/docstore"
)

// server is the one database server of this test binary, started on first use.
type server struct {
	once   sync.Once
	uri    string // what docstore.Open connects to
	ferret bool
	dir    string
	stop   func()
	client *mongo.Client // drops the tests' databases
	err    error
}

var srv server // test-binary scope: one embedded server is shared by the binary's tests

func (s *server) start() {
	s.uri = os.Getenv("MONGOTEST_URI")
	if s.uri == "" {
		s.dir, s.err = os.MkdirTemp("", "mongotest-")
		if s.err != nil {
			return
		}
		var uri string
		uri, s.stop, s.err = startFerretDB(s.dir)
		if s.err != nil {
			return
		}
		// FerretDB v1 applies an update atomically only when one connection writes at a time.
		s.uri, s.ferret = uri+"?maxPoolSize=1", true
	}
	s.client, s.err = mongo.Connect(options.Client().ApplyURI(s.uri).SetTimeout(30 * time.Second))
}

// FerretDB reports whether the tests run on the embedded FerretDB (MONGOTEST_URI unset) rather than MongoDB.
func FerretDB() bool { return os.Getenv("MONGOTEST_URI") == "" }

// Config returns the configuration of a fresh database (a name of its own on the shared server), dropped when
// the test ends.
func Config(t testing.TB) docstore.Config {
	t.Helper()
	srv.once.Do(srv.start)
	if srv.err != nil {
		t.Fatalf("mongotest: start database: %v", srv.err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "t_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.client.Database(name).Drop(ctx)
	})
	return docstore.Config{URI: srv.uri, Name: name, OpTimeout: 30 * time.Second}
}

// New returns a fresh, empty database on the MongoDB engine, closed and dropped when the test ends.
func New(t testing.TB) *docstore.DB {
	t.Helper()
	cfg := Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := docstore.Open(ctx, cfg, nil)
	if err != nil {
		t.Fatalf("mongotest: open database: %v", err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) }) // runs before the drop registered by Config
	return db
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

// startFerretDB starts FerretDB with its SQLite backend storing under dir, listening on a Unix socket inside
// dir (or on 127.0.0.1 with a free port when the socket path would be too long), and returns its URI.
func startFerretDB(dir string) (string, func(), error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	listener := ferretdb.ListenerConfig{}
	sock := filepath.Join(dir, "ferretdb.sock")
	if len(sock) < 100 {
		listener.Unix = sock
	} else {
		listener.TCP = "127.0.0.1:0"
	}
	fdb, err := ferretdb.New(&ferretdb.Config{
		Listener:  listener,
		Logger:    slog.New(slog.DiscardHandler), // it logs every connection at info and every error reply at warn
		Handler:   "sqlite",
		SQLiteURL: (&url.URL{Scheme: "file", Opaque: dir + "/"}).String(),
	})
	if err != nil {
		return "", nil, fmt.Errorf("start FerretDB: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = fdb.Run(ctx)
	}()
	stop := func() { cancel(); <-done }
	if listener.Unix != "" {
		// The driver takes a Unix socket as a percent-encoded host ending in .sock.
		return "mongodb://" + url.PathEscape(sock) + "/", stop, nil
	}
	uri := fdb.MongoDBURI()
	if _, _, err := net.SplitHostPort(uri[len("mongodb://") : len(uri)-1]); err != nil {
		stop()
		return "", nil, errors.Join(fmt.Errorf("FerretDB address %q", uri), err)
	}
	return uri, stop, nil
}
