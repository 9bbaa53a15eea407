package auth

import (
	"testing"

	"github.com/openir/platform/pkg/apperr"
)

func TestCheckLogin(t *testing.T) {
	for _, l := range []string{"alice", "a", "analyst@demo", "x.y_z+w-1", "Current", "currents"} {
		if err := CheckLogin(l); err != nil {
			t.Errorf("%q refused: %v", l, err)
		}
	}
	for _, l := range []string{"current", "_search", "_stats", "", ".a", "a b", string(make([]byte, 129))} {
		if err := CheckLogin(l); apperr.KindOf(err) != apperr.Invalid {
			t.Errorf("%q: err = %v, want a 400 AttributeCheckingError on login", l, err)
		}
	}
	if UserRef("current", "bob") != "bob" || UserRef("alice", "bob") != "alice" {
		t.Fatal("UserRef")
	}
}
