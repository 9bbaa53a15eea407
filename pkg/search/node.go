package search

// Op is the operator of a [Node].
type Op string

// The operators of the neutral filter tree.
const (
	// OpAll matches every document.
	OpAll Op = "all"
	// OpAnd matches when every child matches; with no children it matches everything.
	OpAnd Op = "and"
	// OpOr matches when at least one child matches; with no children it matches nothing.
	OpOr Op = "or"
	// OpNot matches when its single child does not match.
	OpNot Op = "not"
	// OpEq matches when the field equals Value.
	OpEq Op = "eq"
	// OpGt matches when the field is greater than Value.
	OpGt Op = "gt"
	// OpGte matches when the field is greater than or equal to Value.
	OpGte Op = "gte"
	// OpLt matches when the field is less than Value.
	OpLt Op = "lt"
	// OpLte matches when the field is less than or equal to Value.
	OpLte Op = "lte"
	// OpIn matches when the field equals one of Values; with no values it matches nothing.
	OpIn Op = "in"
	// OpExists matches when the field is present.
	OpExists Op = "exists"
	// OpLike matches when the field contains the string Value, ignoring case.
	OpLike Op = "like"
	// OpWildcard matches when the whole field matches the pattern Value, ignoring case: "*" stands for any run
	// of characters, "?" for exactly one; every other character is literal.
	OpWildcard Op = "wildcard"
	// OpPrefix matches when the field starts with the string Value (case-sensitive).
	OpPrefix Op = "prefix"
	// OpSuffix matches when the field ends with the string Value (case-sensitive).
	OpSuffix Op = "suffix"
)

// Node is one node of the neutral filter tree produced by [Parse].
type Node struct {
	// Op is the operator.
	Op Op
	// Path is the storage path of the field (from [Field].Path) for the field operators.
	Path string
	// Value is the operand, coerced to the field's type, of OpEq, OpGt, OpGte, OpLt and OpLte (string, int64,
	// float64 or bool), and the user's raw string for OpLike, OpWildcard, OpPrefix and OpSuffix.
	Value any
	// Values are the coerced operands of OpIn (never nil for a parsed OpIn).
	Values []any
	// Children are the operands of OpAnd, OpOr and OpNot (exactly one child for OpNot).
	Children []Node
}
