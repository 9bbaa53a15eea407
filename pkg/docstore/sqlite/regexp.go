package sqlite

import (
	"database/sql/driver"
	"regexp"
	"sync"

	"modernc.org/sqlite"
)

// sqliteRegexpFunc is the SQL function docstore_regexp(pattern, value): 1 when value is a string matching the
// Go regular expression pattern, 0 otherwise (numbers, NULL). Patterns are built by the translator from the
// user's text (quoted), never taken from it.
const sqliteRegexpFunc = "docstore_regexp"

var registerOnce sync.Once

// registerSQLiteFuncs registers the functions of the engine, once per process, before any connection opens.
func registerSQLiteFuncs() {
	registerOnce.Do(func() {
		sqlite.MustRegisterDeterministicScalarFunction(sqliteRegexpFunc, 2, sqliteRegexp)
	})
}

func sqliteRegexp(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	var s string
	switch v := args[1].(type) {
	case string:
		s = v
	case []byte: // text sent as a blob so that NUL bytes survive
		s = string(v)
	default:
		return int64(0), nil
	}
	p, ok := args[0].(string)
	if !ok {
		return int64(0), nil
	}
	re, err := compiledPattern(p)
	if err != nil {
		return nil, err
	}
	if re.MatchString(s) {
		return int64(1), nil
	}
	return int64(0), nil
}

// patterns is a bounded cache of compiled patterns (cleared when full).
var patterns struct {
	sync.RWMutex
	m map[string]*regexp.Regexp
}

const maxPatterns = 256

func compiledPattern(p string) (*regexp.Regexp, error) {
	patterns.RLock()
	re := patterns.m[p]
	patterns.RUnlock()
	if re != nil {
		return re, nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	patterns.Lock()
	if patterns.m == nil || len(patterns.m) >= maxPatterns {
		patterns.m = make(map[string]*regexp.Regexp, maxPatterns)
	}
	patterns.m[p] = re
	patterns.Unlock()
	return re, nil
}
