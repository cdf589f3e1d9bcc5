package catalog_test

import (
	"fmt"

	"github.com/stampede-lab/stampede/internal/catalog"
)

func ExampleNormalizeQuery() {
	// Equivalent searches share one cache entry.
	fmt.Printf("%q\n", catalog.NormalizeQuery("  Steel   CHAIR "))
	// Output: "steel chair"
}

func ExampleParseIDs() {
	ids, err := catalog.ParseIDs("3, 1,2")
	fmt.Println(ids, err)
	_, err = catalog.ParseIDs("1,x")
	fmt.Println(err)
	// Output:
	// [3 1 2] <nil>
	// id "x" is not a positive integer
}
