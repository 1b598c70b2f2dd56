// Command typecheck proves that Go packages compile for another platform
// without compiling them: it loads the packages named on the command line
// and every package they import, for the GOOS and GOARCH of its environment
// (CGO_ENABLED=0, as the distribution is built), and type-checks them all
// from source, function bodies included, with go/types, the checker the
// compiler itself uses. It exits 1 listing every error: a file missing for
// the platform (build constraints), an undefined name, a type mismatch, an
// unused import or variable, an embed pattern that matches nothing.
//
//	GOOS=darwin GOARCH=arm64 typecheck -C _build .
//	typecheck -targets 'linux/arm64 windows/amd64' -C _build .
//
// With -targets it checks each platform in turn in one process, and parses
// each source file once for all of them (most files are the same on every
// platform): a platform added costs its type-check, not a second parse.
//
// What it does not do is generate code, which is most of a build's time:
// `make test` proves this way that the distribution compiles for the
// platforms it ships to but does not run there, in a fraction of a
// cross-build's time (each cross-build compiles the whole dependency tree
// again for its platform, and caches nothing the other builds can use).
// What only a linker checks (assembly, go:linkname targets) is left to
// `make crossbuild`, which `make dist` runs.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/tools/go/packages"
)

func main() {
	dir := flag.String("C", ".", "the module `folder` the patterns are relative to")
	targets := flag.String("targets", "", "the `platforms` to check, os/arch separated by spaces or commas (default: $GOOS/$GOARCH)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: [GOOS=<os> GOARCH=<arch>] typecheck [-targets 'os/arch ...'] [-C folder] pattern...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	list := strings.FieldsFunc(*targets, func(r rune) bool { return r == ' ' || r == ',' })
	if len(list) == 0 {
		list = []string{envOr("GOOS", runtime.GOOS) + "/" + envOr("GOARCH", runtime.GOARCH)}
	}
	fset, parse := token.NewFileSet(), newParseCache()
	failed := false
	for _, target := range list {
		goos, goarch, ok := strings.Cut(target, "/")
		if !ok || goos == "" || goarch == "" {
			fmt.Fprintf(os.Stderr, "typecheck: %q is not os/arch\n", target)
			os.Exit(2)
		}
		if !check(*dir, goos, goarch, fset, parse, flag.Args()) {
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// check type-checks patterns and everything they import for goos/goarch,
// reporting what fails on stderr; it returns whether all type-checked.
func check(dir, goos, goarch string, fset *token.FileSet, parse *parseCache, patterns []string) bool {
	start := time.Now()
	cfg := &packages.Config{
		// NeedSyntax with NeedDeps type-checks every package from source:
		// no export data, so `go list` compiles nothing.
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports |
			packages.NeedDeps | packages.NeedTypes | packages.NeedSyntax,
		Dir:       dir,
		Env:       append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0"),
		Fset:      fset,
		ParseFile: parse.parseFile,
	}
	roots, err := packages.Load(cfg, patterns...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "typecheck %s/%s: %v\n", goos, goarch, err)
		return false
	}
	if len(roots) == 0 {
		fmt.Fprintf(os.Stderr, "typecheck %s/%s: no package matches %v in %s\n", goos, goarch, patterns, dir)
		return false
	}
	checked, failed := 0, 0
	packages.Visit(roots, nil, func(p *packages.Package) {
		checked++
		if p.Types == nil || !p.Types.Complete() && len(p.Errors) == 0 {
			fmt.Fprintf(os.Stderr, "%s: not type-checked\n", p.PkgPath)
			failed++
		}
		for _, e := range p.Errors {
			fmt.Fprintf(os.Stderr, "%s: %v\n", p.PkgPath, e)
			failed++
		}
	})
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "typecheck %s/%s: %d errors in %d packages\n", goos, goarch, failed, checked)
		return false
	}
	fmt.Printf("typecheck %s/%s: %d packages type-check (%s) in %.0fs\n", goos, goarch, checked, dir, time.Since(start).Seconds())
	return true
}

// parseCache parses each file once for every platform checked: the same
// name with the same contents gives the same *ast.File, which go/types only
// reads. Without ast.Object resolution, which go/types does not use.
type parseCache struct {
	mu    sync.Mutex
	files map[string]*parsed
}

type parsed struct {
	once sync.Once
	src  []byte
	f    *ast.File
	err  error
}

func newParseCache() *parseCache { return &parseCache{files: map[string]*parsed{}} }

func (c *parseCache) parseFile(fset *token.FileSet, filename string, src []byte) (*ast.File, error) {
	c.mu.Lock()
	p, ok := c.files[filename]
	if !ok {
		p = &parsed{src: src}
		c.files[filename] = p
	}
	c.mu.Unlock()
	if !bytes.Equal(p.src, src) { // the file changed between two platforms' loads
		return parseGo(fset, filename, src)
	}
	p.once.Do(func() { p.f, p.err = parseGo(fset, filename, src) })
	return p.f, p.err
}

func parseGo(fset *token.FileSet, filename string, src []byte) (*ast.File, error) {
	return parser.ParseFile(fset, filename, src, parser.AllErrors|parser.ParseComments|parser.SkipObjectResolution)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
