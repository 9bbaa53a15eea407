package query

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/openir/platform/case-svc/internal/cases"
)

// similarKey is one key of an in-memory order of similar cases.
type similarKey struct {
	field string
	desc  bool
}

// similarFields are the orders similar cases accept: fields of the case and the counts.
var similarFields = map[string]func(cases.SimilarCase) float64{
	"_createdAt":             func(s cases.SimilarCase) float64 { return float64(s.Case.CreatedAt.UnixMilli()) },
	"createdAt":              func(s cases.SimilarCase) float64 { return float64(s.Case.CreatedAt.UnixMilli()) },
	"startDate":              func(s cases.SimilarCase) float64 { return float64(s.Case.StartDate.UnixMilli()) },
	"number":                 func(s cases.SimilarCase) float64 { return float64(s.Case.Number) },
	"caseId":                 func(s cases.SimilarCase) float64 { return float64(s.Case.Number) },
	"severity":               func(s cases.SimilarCase) float64 { return float64(s.Case.Severity) },
	"tlp":                    func(s cases.SimilarCase) float64 { return float64(s.Case.TLP) },
	"similarObservableCount": func(s cases.SimilarCase) float64 { return float64(s.SimilarObservables) },
	"similarIocCount":        func(s cases.SimilarCase) float64 { return float64(s.SimilarIOCs) },
	"observableCount":        func(s cases.SimilarCase) float64 { return float64(s.Observables) },
	"iocCount":               func(s cases.SimilarCase) float64 { return float64(s.IOCs) },
}

func similarSort(specs []string) ([]similarKey, error) {
	var keys []similarKey
	for _, spec := range specs {
		for part := range strings.SplitSeq(spec, ",") {
			part = strings.TrimSpace(part)
			k := similarKey{}
			switch {
			case strings.HasPrefix(part, "-"):
				k.desc, part = true, part[1:]
			case strings.HasPrefix(part, "+"):
				part = part[1:]
			}
			if part == "" {
				continue
			}
			if _, ok := similarFields[part]; !ok {
				names := slices.Sorted(maps.Keys(similarFields))
				return nil, fmt.Errorf("unknown field %s (similar cases sort on %s)", strconv.Quote(Shorten(part)),
					strings.Join(names, ", "))
			}
			k.field = part
			keys = append(keys, k)
		}
	}
	return keys, nil
}

func sortSimilar(l []cases.SimilarCase, keys []similarKey) {
	if len(keys) == 0 {
		return // the service's order: newest case first
	}
	slices.SortStableFunc(l, func(a, b cases.SimilarCase) int {
		for _, k := range keys {
			x, y := similarFields[k.field](a), similarFields[k.field](b)
			if x == y {
				continue
			}
			r := -1
			if x > y {
				r = 1
			}
			if k.desc {
				r = -r
			}
			return r
		}
		return 0
	})
}
