package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// A trimmer removes from one parsed file what uses the packages and names it
// holds as cut.
type trimmer struct {
	fset    *token.FileSet
	file    *ast.File
	imports map[string]bool // the names the file's imports go by
	pkgs    map[string]bool // the names of the removed imports
	kept    map[string]bool // the names of the storage imports the file keeps
	names   map[string]bool // the removed fields and declarations of the package
	removed []ast.Node      // what went, so that its comments go too
}

// trimFile applies c to the file at filename and rewrites it; names holds
// the package's removed fields and declarations, and gains this file's.
func trimFile(filename string, c cut, names map[string]bool) error {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, filename, nil, parser.ParseComments)
	if err != nil {
		return err
	}
	t := &trimmer{fset: fset, file: file, imports: map[string]bool{}, pkgs: map[string]bool{}, kept: map[string]bool{}, names: names}
	for _, spec := range file.Imports {
		t.imports[importName(spec)] = true
		if slices.Contains(c.keep, strings.Trim(spec.Path.Value, `"`)) {
			t.kept[importName(spec)] = true
		}
	}
	for _, p := range c.drop {
		name, err := t.removeImport(p)
		if err != nil {
			return err
		}
		if !t.uses(name) {
			return fmt.Errorf("nothing uses the import of %s as %s", p, name)
		}
		t.pkgs[name] = true
	}
	for _, name := range c.decls {
		if err := t.removeDecl(name); err != nil {
			return err
		}
	}
	if err := t.cutFields(); err != nil {
		return err
	}
	if err := t.cutFuncs(); err != nil {
		return err
	}
	for _, p := range c.orphans {
		name, err := t.removeImport(p)
		if err != nil {
			return err
		}
		if t.uses(name) {
			return fmt.Errorf("%s is still used after the cut", p)
		}
	}
	if err := checkStorageImports(file, c.keep); err != nil {
		return err
	}
	t.dropComments()
	var out bytes.Buffer
	if err := format.Node(&out, fset, file); err != nil {
		return err
	}
	return os.WriteFile(filename, out.Bytes(), 0o644)
}

// importName is the name a file refers to an import by: its own, or the
// last element of the path (true of the paths cuts lists).
func importName(spec *ast.ImportSpec) string {
	p, _ := strconv.Unquote(spec.Path.Value)
	if spec.Name != nil {
		return spec.Name.Name
	}
	return path.Base(p)
}

// removeImport removes the import of p and returns the name it went by.
func (t *trimmer) removeImport(p string) (string, error) {
	for _, decl := range t.file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.IMPORT {
			continue
		}
		for i, spec := range gen.Specs {
			imp := spec.(*ast.ImportSpec)
			if imp.Path.Value != strconv.Quote(p) {
				continue
			}
			gen.Specs = slices.Delete(gen.Specs, i, i+1)
			t.file.Imports = slices.DeleteFunc(t.file.Imports, func(s *ast.ImportSpec) bool { return s == imp })
			return importName(imp), nil
		}
	}
	return "", fmt.Errorf("no import of %s", p)
}

// uses reports whether the file's declarations refer to the package name.
func (t *trimmer) uses(name string) bool {
	return slices.ContainsFunc(t.file.Decls, func(decl ast.Decl) bool {
		return usesPkg(decl, map[string]bool{name: true})
	})
}

// usesKept reports whether node refers to a storage package the file keeps
// (what uses one is not to be cut).
func (t *trimmer) usesKept(node ast.Node) bool {
	return usesPkg(node, t.kept)
}

// usesPkg reports whether node has a selector pkg.X for a name in pkgs.
func usesPkg(node ast.Node, pkgs map[string]bool) bool {
	used := false
	ast.Inspect(node, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && pkgs[id.Name] {
				used = true
			}
		}
		return !used
	})
	return used
}

// removeDecl removes the type or function (or method) called name.
func (t *trimmer) removeDecl(name string) error {
	for i, decl := range t.file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.Name != name {
				continue
			}
			t.file.Decls = slices.Delete(t.file.Decls, i, i+1)
		case *ast.GenDecl:
			if d.Tok != token.TYPE || len(d.Specs) != 1 || d.Specs[0].(*ast.TypeSpec).Name.Name != name {
				continue
			}
			t.file.Decls = slices.Delete(t.file.Decls, i, i+1)
		default:
			continue
		}
		t.removed = append(t.removed, decl)
		t.names[name] = true
		return nil
	}
	return fmt.Errorf("no declaration of %s", name)
}

// cutFields removes the struct fields whose types use what is cut; their
// names join the cut ones. Other declarations that use it are an error.
func (t *trimmer) cutFields() error {
	for _, decl := range t.file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok == token.IMPORT {
			continue
		}
		for _, spec := range gen.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				if t.mentions(spec) {
					return t.cannotCut(spec, where)
				}
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				if t.mentions(ts) {
					return t.cannotCut(ts, where)
				}
				continue
			}
			st.Fields.List = slices.DeleteFunc(st.Fields.List, func(f *ast.Field) bool {
				if !t.mentions(f.Type) {
					return false
				}
				for _, id := range f.Names {
					t.names[id.Name] = true
				}
				t.removed = append(t.removed, f)
				return true
			})
		}
	}
	return nil
}

// cutFuncs removes from the functions' bodies the statements that use what
// is cut; a function whose signature uses it is an error.
func (t *trimmer) cutFuncs() error {
	for _, decl := range t.file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || !t.mentions(fn) {
			continue
		}
		if t.mentions(fn.Type) || (fn.Recv != nil && t.mentions(fn.Recv)) {
			return t.cannotCut(fn.Type, where)
		}
		var err error
		if fn.Body.List, err = t.cutStmts(fn.Body.List); err != nil {
			return err
		}
	}
	return nil
}

// cutStmts removes the if statements and switch cases in list that use what
// is cut, looking into blocks, loops and switches; any other statement that
// uses it is an error. A range loop's value variable that nothing uses any
// more goes too.
func (t *trimmer) cutStmts(list []ast.Stmt) ([]ast.Stmt, error) {
	var kept []ast.Stmt
	for _, stmt := range list {
		if !t.mentions(stmt) {
			kept = append(kept, stmt)
			continue
		}
		var err error
		switch s := stmt.(type) {
		case *ast.IfStmt, *ast.CaseClause:
			if t.usesKept(s) {
				return nil, t.cannotCut(s, "uses what is cut and a storage package the file keeps")
			}
			t.removed = append(t.removed, s)
			continue
		case *ast.BlockStmt:
			s.List, err = t.cutStmts(s.List)
		case *ast.SwitchStmt:
			if t.mentions(s.Init) || t.mentions(s.Tag) {
				return nil, t.cannotCut(s, where)
			}
			s.Body.List, err = t.cutStmts(s.Body.List)
		case *ast.RangeStmt:
			if t.mentions(s.Key) || t.mentions(s.Value) || t.mentions(s.X) {
				return nil, t.cannotCut(s, where)
			}
			if s.Body.List, err = t.cutStmts(s.Body.List); err == nil {
				if v, ok := s.Value.(*ast.Ident); ok && !refers(s.Body, v.Name) {
					s.Value = nil
				}
			}
		default:
			return nil, t.cannotCut(s, where)
		}
		if err != nil {
			return nil, err
		}
		kept = append(kept, stmt)
	}
	return kept, nil
}

// mentions reports whether node uses a removed import, field or
// declaration: pkg.X for a removed import's name pkg; x.Name or Name for a
// removed Name, where x is not an import.
func (t *trimmer) mentions(node ast.Node) bool {
	found := false
	if node == nil {
		return false
	}
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && t.imports[id.Name] {
				found = found || t.pkgs[id.Name]
				return false
			}
			found = found || t.names[n.Sel.Name] || t.mentions(n.X)
			return false
		case *ast.Ident:
			found = found || t.names[n.Name]
		}
		return !found
	})
	return found
}

// refers reports whether node has an identifier called name.
func refers(node ast.Node, name string) bool {
	found := false
	ast.Inspect(node, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == name {
			found = true
		}
		return !found
	})
	return found
}

// checkStorageImports checks that the file's imports from Jaeger's storage
// packages are keep, no more and no fewer: a backend the release added, or
// a cut that took the memory backend with it, stops the build.
func checkStorageImports(file *ast.File, keep []string) error {
	var have []string
	for _, spec := range file.Imports {
		p, _ := strconv.Unquote(spec.Path.Value)
		if strings.HasPrefix(p, jaeger+"internal/storage/") {
			have = append(have, p)
		}
	}
	slices.Sort(have)
	want := slices.Sorted(slices.Values(keep))
	if !slices.Equal(have, want) {
		return fmt.Errorf("after the cut the file imports the storage packages %q, want %q", have, want)
	}
	return nil
}

// where is why cannotCut's node cannot go: it uses what is cut, but is not
// a field, an if statement, a switch case or a declaration cuts names.
const where = "uses what is cut where trim cannot remove it"

// cannotCut is the error for node, which trim cannot remove, and why.
func (t *trimmer) cannotCut(node ast.Node, why string) error {
	var src bytes.Buffer
	_ = format.Node(&src, t.fset, node)
	first, _, _ := strings.Cut(src.String(), "\n")
	return fmt.Errorf("%s: %s: %s", t.fset.Position(node.Pos()), why, first)
}

// dropComments removes the comments of what was removed.
func (t *trimmer) dropComments() {
	t.file.Comments = slices.DeleteFunc(t.file.Comments, func(g *ast.CommentGroup) bool {
		return slices.ContainsFunc(t.removed, func(n ast.Node) bool {
			start, end := n.Pos(), n.End()
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Doc != nil {
					start = n.Doc.Pos()
				}
			case *ast.GenDecl:
				if n.Doc != nil {
					start = n.Doc.Pos()
				}
			case *ast.Field:
				if n.Doc != nil {
					start = n.Doc.Pos()
				}
				if n.Comment != nil {
					end = n.Comment.End()
				}
			}
			return start <= g.Pos() && g.End() <= end
		})
	})
}
