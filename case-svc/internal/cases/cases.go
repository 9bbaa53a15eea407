// Package cases is the case management domain of case-svc: cases, observables of cases and alerts, alerts,
// merges and similar cases. It owns the types, the rules (defaults, validation, status transitions, what a
// caller's permissions allow in its organisation) and the interfaces of the stores it consumes. Who the
// caller is and what its profile permits are package identity's; the tasks of cases and their logs are
// package task's, the case templates package template's; the custom field definitions and the rules of their
// values are package customfield's; analyzer jobs and responder actions are the connector's.
package cases

import (
	"github.com/openir/platform/pkg/apperr"
)

// Errors shared by the services.
var (
	ErrCaseNotFound = apperr.New(apperr.NotFound, "Case not found")
)
