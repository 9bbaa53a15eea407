package mongo

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The codec between the JSON documents of pkg/docstore and BSON, without a server (the conformance suite runs the
// engine on a server; FerretDB, its stand-in here, has no decimal128): a document goes through BSON and back
// with its keys in order and its numbers as written, integers beyond int64 as decimal128.
func TestCodecRoundTrip(t *testing.T) {
	for _, doc := range []string{
		`{"_id":"a","o":{"b":1,"a":{"z":[1,2.5,"x"],"y":null}},"t":true}`,
		`{"_id":"b","u":18446744073709551615,"neg":-9223372036854775809,"max":9223372036854775807,"min":-9223372036854775808}`,
		`{"_id":"c","huge":1234567890123456789012345678901234,"zeros":100000000000000000000000000000000000000000000000000}`,
		`{"_id":"d","in":[18446744073709551616,{"v":-18446744073709551616}],"f":2.5,"g":1e+300,"small":1e-7}`,
	} {
		d, err := jsonToBSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatalf("%s: marshal: %v", doc, err)
		}
		got, err := bsonToJSON(nil, raw)
		if err != nil {
			t.Fatalf("%s: read back: %v", doc, err)
		}
		if string(got) != doc {
			t.Errorf("read back\n %s\nwant\n %s", got, doc)
		}
	}
}

func TestCodecNumbers(t *testing.T) {
	d, err := jsonToBSON([]byte(`{"i":5,"big":18446744073709551615,"f":5.0}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d[0].Value.(int64); !ok {
		t.Errorf("5 is a %T, want int64", d[0].Value)
	}
	if v, ok := d[1].Value.(bson.Decimal128); !ok || v.String() != "18446744073709551615" {
		t.Errorf("18446744073709551615 is %T %v, want the decimal128 of the same value", d[1].Value, d[1].Value)
	}
	if _, ok := d[2].Value.(float64); !ok {
		t.Errorf("5.0 is a %T, want float64", d[2].Value)
	}
	// More digits than a decimal128 keeps: refused rather than rounded.
	long := `{"n":` + strings.Repeat("7", 35) + `}`
	if _, err := jsonToBSON([]byte(long)); err == nil {
		t.Errorf("%s was taken", long)
	}
}
