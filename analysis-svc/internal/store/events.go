package store

import (
	"github.com/openir/platform/pkg/docstore"
	"github.com/openir/platform/pkg/events"
)

// eventsName is the collection of job events (pkg/events's event log); the webhooks' collections are
// pkg/events's (OutboxSpecs).
const eventsName = "events"

// EventSpec declares the job events' collection: pkg/events's indexes (the tailers', the retention's and the
// repair's reads by date) and nothing else (no API searches it).
func EventSpec() docstore.Spec { return events.LogSpec(eventsName) }
