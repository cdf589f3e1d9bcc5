// Command trim cuts the storage backends stampede does not use out of a copy
// of the Jaeger release, before build.sh compiles it there:
//
//	go run ./trim DIR
//
// DIR is the copy (the module's root). In the files cuts lists, trim removes
// the imports of the other backends and what uses them: the struct fields and
// the if statements and switch cases that name them, and the declarations the
// list names. It prints the import paths it removed, one a line, so that
// build.sh can check that the build links none of them. A release whose code
// has another shape (an import, a declaration or a use that is not where the
// list expects it) makes trim fail and say where; it never guesses.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "trim:", err)
		os.Exit(1)
	}
}

// run trims the copy of the release at args[0] and writes the removed
// import paths to stdout.
func run(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: trim DIR (a copy of the Jaeger module)")
	}
	// Fields and declarations are the package's: a field cut in one file
	// takes its uses in the package's other files.
	cutNames := map[string]map[string]bool{}
	for _, c := range cuts() {
		dir := filepath.Dir(c.file)
		if cutNames[dir] == nil {
			cutNames[dir] = map[string]bool{}
		}
		if err := trimFile(filepath.Join(args[0], c.file), c, cutNames[dir]); err != nil {
			return fmt.Errorf("%s: %w; the release's code is not what tools/jaeger/trim expects: update its cuts", c.file, err)
		}
		for _, path := range c.drop {
			fmt.Fprintln(stdout, path)
		}
	}
	return nil
}
