// Package cases is the domain of case-svc: organisations, users and their profiles, cases, case templates,
// tasks and their logs, custom fields, observables of cases and alerts, alerts, similar cases and analyzer
// job records. It owns the types, the rules (who may do what in which organisation, defaults, validation,
// status transitions) and the interfaces of the stores it consumes.
package cases

import (
	"github.com/openir/platform/pkg/apperr"
)

// Errors shared by the services.
var (
	ErrCaseNotFound        = apperr.New(apperr.NotFound, "Case not found")
	ErrTaskNotFound        = apperr.New(apperr.NotFound, "Task not found")
	ErrLogNotFound         = apperr.New(apperr.NotFound, "Log not found")
	ErrTemplateNotFound    = apperr.New(apperr.NotFound, "CaseTemplate not found")
	ErrTemplateExists      = apperr.New(apperr.Conflict, "a case template with this name already exists")
	ErrCustomFieldNotFound = apperr.New(apperr.NotFound, "CustomField not found")
	ErrCustomFieldExists   = apperr.New(apperr.Conflict, "a custom field with this name already exists")
	ErrAttachmentNotFound  = apperr.New(apperr.NotFound, "Attachment not found")
)
