package cases

import (
	"context"
	"slices"

	"github.com/openir/platform/case-svc/internal/identity"
	"github.com/openir/platform/case-svc/internal/record"
	"github.com/openir/platform/pkg/search"
)

// LinkedCase is a case sharing observable values with another case (the reference system's case links): the
// case, and the observables of the other case whose values it also holds.
type LinkedCase struct {
	Case   Case
	Shared []Observable
}

// Bounds of one case's links (LinkedCases): the case's observables compared, the observables of other cases
// read for them, and the linked cases answered. Past one, the answer is cut and says so.
const (
	LinksCompareMax = 10000
	LinksSimilarMax = 50000
	LinksCasesMax   = 100
)

// LinkedCases returns the cases of the caller's organisation, other than the given one and matching
// caseFilter, holding an observable with the same value as one of the case's (of any type; files by
// content), newest case first. Observables marked ignoreSimilarity count on neither side, as for similar
// cases (one lookup on observables by organisation and key, index organisation_key). The work is bounded
// whatever the data: at most LinksCompareMax of the case's observables are compared, LinksSimilarMax
// observables of other cases read and the newest LinksCasesMax linked cases answered; cut reports whether a
// bound was reached (the answer may then miss links).
func (s *Service) LinkedCases(ctx context.Context, c identity.Caller, cs Case, caseFilter search.Node) (links []LinkedCase, cut bool, err error) {
	own, _, err := s.observables.Observables(ctx, record.And(search.Node{Op: search.OpAnd, Children: []search.Node{
		{Op: search.OpEq, Path: PathCaseID, Value: cs.ID}, {Op: search.OpEq, Path: "ignoreSimilarity", Value: false}}}, record.InOrg(c.Org)),
		search.Page{Limit: LinksCompareMax + 1})
	if err != nil {
		return nil, false, err
	}
	if len(own) > LinksCompareMax {
		own, cut = own[:LinksCompareMax], true
	}
	var keys []string
	seenKey := map[string]bool{}
	for _, o := range own {
		if !seenKey[o.Key] {
			seenKey[o.Key] = true
			keys = append(keys, o.Key)
		}
	}
	if len(keys) == 0 {
		return []LinkedCase{}, cut, nil
	}
	similar, err := s.observables.SimilarObservables(ctx, c.Org, keys, LinksSimilarMax+1)
	if err != nil {
		return nil, false, err
	}
	if len(similar) > LinksSimilarMax {
		similar, cut = similar[:LinksSimilarMax], true
	}
	keysOf := map[string]map[string]bool{} // linked case → the shared keys
	var ids []any
	for _, o := range similar {
		if o.CaseID == "" || o.CaseID == cs.ID {
			continue
		}
		if keysOf[o.CaseID] == nil {
			keysOf[o.CaseID] = map[string]bool{}
			ids = append(ids, o.CaseID)
		}
		keysOf[o.CaseID][o.Key] = true
	}
	if len(ids) == 0 {
		return []LinkedCase{}, cut, nil
	}
	css, _, err := s.Cases(ctx, c, record.And(caseFilter, search.Node{Op: search.OpIn, Path: "_id", Values: ids}),
		search.Page{Limit: LinksCasesMax + 1, Sort: []search.SortKey{{Path: "createdAt", Desc: true}}})
	if err != nil {
		return nil, false, err
	}
	if len(css) > LinksCasesMax {
		css, cut = css[:LinksCasesMax], true
	}
	out := make([]LinkedCase, 0, len(css))
	for _, linked := range css {
		lc := LinkedCase{Case: linked, Shared: []Observable{}}
		shared := keysOf[linked.ID]
		for _, o := range own {
			if shared[o.Key] {
				lc.Shared = append(lc.Shared, o)
			}
		}
		out = append(out, lc)
	}
	slices.SortStableFunc(out, func(x, y LinkedCase) int { return y.Case.CreatedAt.Compare(x.Case.CreatedAt) })
	return out, cut, nil
}

// SimilarObservable is an observable of another case with the same value as a given one, with its case.
type SimilarObservable struct {
	Observable Observable
	Case       Case
}

// ObservableSimilar returns the observables of the other cases of the caller's organisation with the same
// value as the observable id (of any type; files by content), newest case first; none when the observable is
// marked ignoreSimilarity. The reference system's GET /api/case/artifact/{id}/similar.
func (s *Service) ObservableSimilar(ctx context.Context, c identity.Caller, id string) ([]SimilarObservable, error) {
	o, err := s.Observable(ctx, c, id)
	if err != nil {
		return nil, err
	}
	if o.IgnoreSimilarity {
		return []SimilarObservable{}, nil
	}
	similar, err := s.observables.SimilarObservables(ctx, c.Org, []string{o.Key}, 0)
	if err != nil {
		return nil, err
	}
	var obsIDs, caseIDs []any
	for _, x := range similar {
		if x.ID == o.ID || x.CaseID == "" || x.CaseID == o.CaseID {
			continue
		}
		obsIDs = append(obsIDs, x.ID)
		if !slices.Contains(caseIDs, any(x.CaseID)) {
			caseIDs = append(caseIDs, x.CaseID)
		}
	}
	if len(obsIDs) == 0 {
		return []SimilarObservable{}, nil
	}
	obs, _, err := s.observables.Observables(ctx, search.Node{Op: search.OpIn, Path: "_id", Values: obsIDs}, search.Page{Limit: len(obsIDs)})
	if err != nil {
		return nil, err
	}
	css, _, err := s.Cases(ctx, c, search.Node{Op: search.OpIn, Path: "_id", Values: caseIDs}, search.Page{Limit: len(caseIDs)})
	if err != nil {
		return nil, err
	}
	byID := map[string]Case{}
	for _, cs := range css {
		byID[cs.ID] = cs
	}
	out := make([]SimilarObservable, 0, len(obs))
	for _, x := range obs {
		if cs, ok := byID[x.CaseID]; ok && x.Org == c.Org {
			out = append(out, SimilarObservable{Observable: x, Case: cs})
		}
	}
	slices.SortStableFunc(out, func(a, b SimilarObservable) int { return b.Case.CreatedAt.Compare(a.Case.CreatedAt) })
	return out, nil
}
