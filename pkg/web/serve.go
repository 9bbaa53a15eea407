package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ServeConfig says where and how to listen.
type ServeConfig struct {
	Addr         string
	TLSCert      string // with TLSKey: serve HTTPS
	TLSKey       string
	WriteTimeout time.Duration // the longest response (long polls); zero = 2 min
	// ReadTimeout is the longest time to read a request, headers and body (slow clients, slow-loris); upload
	// routes extend it for their body (Limits.UploadTimeout). Once the body is read the deadline is lifted,
	// so long polls are not cut. Zero = 1 min.
	ReadTimeout time.Duration
}

// Server defaults.
const (
	DefaultReadTimeout = time.Minute
	readHeaderTimeout  = 10 * time.Second
	// maxHeaderBytes bounds the request line and headers (query strings included).
	maxHeaderBytes = 64 << 10
)

// NewServer returns the http.Server of Serve: header and body read timeouts, bounded headers.
func NewServer(log *slog.Logger, h http.Handler, cfg ServeConfig) *http.Server {
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 2 * time.Minute
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(readHeaderTimeout, cfg.ReadTimeout),
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// Serve listens on cfg.Addr and serves h until ctx ends, then shuts down gracefully (20 s budget).
func Serve(ctx context.Context, log *slog.Logger, h http.Handler, cfg ServeConfig) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	srv := NewServer(log, h, cfg)
	tls := cfg.TLSCert != ""
	log.Info("listening", "addr", ln.Addr().String(), "tls", tls)
	done := make(chan error, 1)
	go func() {
		if tls {
			done <- srv.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
