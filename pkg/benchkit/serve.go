package benchkit

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// LogSink is a service's log output in a benchmark: info lines (one per request) are formatted as in
// production and dropped; the first 20 warnings and errors go to Out so that a failing run says why.
type LogSink struct {
	Out io.Writer
	mu  sync.Mutex
	n   int
}

func (l *LogSink) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"level":"ERROR"`)) || bytes.Contains(p, []byte(`"level":"WARN"`)) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.n++
		if l.n <= 20 {
			_, _ = l.Out.Write(p)
		}
	}
	return len(p), nil
}

// Server is a service served over HTTP on 127.0.0.1 in the benchmark's process.
type Server struct {
	URL string // http://127.0.0.1:port
	srv *http.Server
}

// Serve serves with srv (the service's server settings, web.NewServer) on a free port of 127.0.0.1.
func Serve(srv *http.Server) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() { _ = srv.Serve(ln) }()
	return &Server{URL: "http://" + ln.Addr().String(), srv: srv}, nil
}

// Close shuts the server down, giving the requests under way 10 s.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}
