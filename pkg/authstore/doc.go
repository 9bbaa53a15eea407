// Package authstore holds the parts of authentication kept in the database (pkg/docstore): the API key index
// and the login throttle's shared counter. pkg/auth, the credentials themselves (passwords, keys, sessions,
// the throttle's rules), links no database engine, so the domain packages that use it link none either.
package authstore
