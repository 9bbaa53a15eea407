package web

// Regression (minor): decodeObject (pkg/web/bind.go) detects trailing data with dec.More(), which is false before a
// closing bracket: a JSON body `{"name":"a"}}` or `{"name":"a"}]` binds without error, while `{"name":"a"} x` is
// refused. Request: POST /api/user with Content-Type application/json and body {"login":"x",…}} → today 201.
// Expected: 400 BadRequest "malformed JSON body: trailing data" (check dec.Token() returns io.EOF, as
// search.ParseJSON does).
//
// Save as pkg/web/bind_trailing_test.go once fixed.

import (
	"net/http"
	"testing"

	"github.com/openir/platform/pkg/apperr"
)

func TestRegression_TrailingClosingBracketIsRefused(t *testing.T) {
	for _, b := range []string{`{"name":"a"}}`, `{"name":"a"}]`, `{"name":"a"}]]}`} {
		var s sample
		err := Bind(ctx(t, http.MethodPost, "/", "application/json", b), &s)
		if apperr.KindOf(err) != apperr.BadRequest {
			t.Errorf("%s: err %v, want BadRequest", b, err)
		}
	}
}
