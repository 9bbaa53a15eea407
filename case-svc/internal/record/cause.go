package record

import "context"

type causeKey struct{}

// WithCause returns ctx naming what caused the changes made with it when no user request did: "job:<id>" for
// the artifacts an analyzer job imports, "rule:<id>" for the actions of an automation rule. The audit trail
// writes it as the events' requestId (when the context carries no request), which is how a rule finds the
// depth of a chain and how an automated change names the rule that made it.
func WithCause(ctx context.Context, cause string) context.Context {
	return context.WithValue(ctx, causeKey{}, cause)
}

// CauseOf returns the cause ctx carries ("" for none).
func CauseOf(ctx context.Context) string {
	s, _ := ctx.Value(causeKey{}).(string)
	return s
}
