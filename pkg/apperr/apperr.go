// Package apperr owns the error kinds shared by both services: every error a handler returns carries a kind
// (mapped to an HTTP status in one place, pkg/web), a message that is safe to show to a client, and an optional
// cause that is only logged. The zero kind is Internal, so an unclassified error never looks like the client's fault.
package apperr

import (
	"errors"
	"fmt"
)

// Kind classifies an error for the client.
type Kind int

// The kinds, one per error type of the contract (DECISIONS.md "Errors").
const (
	Internal        Kind = iota // 500 InternalError
	BadRequest                  // 400 BadRequest
	Invalid                     // 400 AttributeCheckingError, with field problems
	Conflict                    // 400 CreateError (duplicate unique name)
	Unauthenticated             // 401 AuthenticationError
	Forbidden                   // 403 AuthorizationError
	NotFound                    // 404 NotFoundError
	TooLarge                    // 413 BadRequest
	RateLimited                 // 429 RateLimitExceeded
	Unavailable                 // 503 ServiceUnavailable: a remote server (an analysis server) cannot be reached
	Unprocessable               // 422 BadRequest: a well-formed request that contradicts an earlier one (a reused Idempotency-Key)
)

// FieldError names one field that failed validation.
type FieldError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// Error is an error with a kind, a client-safe message and an optional cause.
type Error struct {
	Kind    Kind
	Message string
	Fields  []FieldError
	Err     error
}

// New returns an error of the given kind whose message is shown to clients.
func New(kind Kind, msg string) *Error { return &Error{Kind: kind, Message: msg} }

// Errorf is New with a formatted message. The arguments end up in the client's message: never pass secrets.
func Errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error of the given kind and message that keeps err as its (logged, never shown) cause.
func Wrap(kind Kind, msg string, err error) *Error { return &Error{Kind: kind, Message: msg, Err: err} }

// Fields returns an Invalid error listing the field problems.
func Fields(problems ...FieldError) *Error {
	msg := "invalid input"
	if len(problems) == 1 {
		msg = problems[0].Name + ": " + problems[0].Message
	} else if len(problems) > 1 {
		msg = fmt.Sprintf("%d invalid fields", len(problems))
	}
	return &Error{Kind: Invalid, Message: msg, Fields: problems}
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// As returns the outermost *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// KindOf returns the kind of the outermost *Error in err's chain; Internal when there is none.
func KindOf(err error) Kind {
	if e := As(err); e != nil {
		return e.Kind
	}
	return Internal
}

// SafeMessage is what a client may read of err: the message of an error of a kind other than Internal, else
// fallback (an unclassified error's text may hold paths, driver or Docker messages: log it, never show it).
func SafeMessage(err error, fallback string) string {
	if e := As(err); e != nil && e.Kind != Internal && e.Message != "" {
		return e.Message
	}
	return fallback
}

// Is reports whether err carries the given kind.
func Is(err error, kind Kind) bool { return err != nil && KindOf(err) == kind }
