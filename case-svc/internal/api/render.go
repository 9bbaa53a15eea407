package api

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/web"
)

// timeOpt turns an optional epoch-milliseconds request field into an optional time.
func timeOpt(p *int64) *time.Time {
	if p == nil {
		return nil
	}
	t := time.UnixMilli(*p)
	return &t
}

// timeChange turns an epoch-milliseconds request field into a domain change.
func timeChange(o web.Opt[int64]) record.Change[time.Time] {
	return record.Change[time.Time]{Set: o.Set, Null: o.Null, V: time.UnixMilli(o.V)}
}

// stringsChange turns a list request field into a domain change.
func stringsChange(o web.Opt[web.Strings]) record.Change[[]string] {
	return record.Change[[]string]{Set: o.Set, Null: o.Null, V: []string(o.V)}
}

// flag reads a boolean option such as nstats from the query string or the body.
func flag(c echo.Context, name string) bool {
	f, err := web.Fields(c)
	if err != nil {
		return false
	}
	switch v := f[name].(type) {
	case bool:
		return v
	case string:
		b, _ := strconv.ParseBool(v)
		return b
	}
	return false
}
