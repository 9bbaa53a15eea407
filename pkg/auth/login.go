package auth

import (
	"regexp"

	"github.com/openir/platform/pkg/apperr"
)

// CurrentUser names the caller in the user routes of both services (/api/user/{login or id}):
// GET /api/user/current is the caller's own user, PATCH /api/user/current changes it, and so on for the
// routes under it. So it is no user's login: CheckLogin refuses it.
const CurrentUser = "current"

// loginRe is the shape of a login on both services. It also keeps out the other words of the user routes
// (_search, _stats), which start with "_".
var loginRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}$`)

// CheckLogin validates a new login: 400 on the field "login" when it is reserved (CurrentUser) or
// malformed.
func CheckLogin(l string) error {
	if l == CurrentUser {
		return apperr.Fields(apperr.FieldError{Name: "login", Message: "reserved"})
	}
	if !loginRe.MatchString(l) {
		return apperr.Fields(apperr.FieldError{Name: "login",
			Message: "1 to 128 letters, digits, '.', '_', '@', '+' or '-', starting with a letter or digit"})
	}
	return nil
}

// UserRef is the user a route's {login} or {id} names: the caller's login for CurrentUser, ref otherwise.
func UserRef(ref, caller string) string {
	if ref == CurrentUser {
		return caller
	}
	return ref
}
