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
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/tools/go/packages"
)

func main() {
	dir := flag.String("C", ".", "the module `folder` the patterns are relative to")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: GOOS=<os> GOARCH=<arch> typecheck [-C folder] pattern...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	goos, goarch := envOr("GOOS", runtime.GOOS), envOr("GOARCH", runtime.GOARCH)
	start := time.Now()
	cfg := &packages.Config{
		// NeedSyntax with NeedDeps type-checks every package from source:
		// no export data, so `go list` compiles nothing.
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports |
			packages.NeedDeps | packages.NeedTypes | packages.NeedSyntax,
		Dir: *dir,
		Env: append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0"),
	}
	roots, err := packages.Load(cfg, flag.Args()...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "typecheck %s/%s: %v\n", goos, goarch, err)
		os.Exit(1)
	}
	if len(roots) == 0 {
		fmt.Fprintf(os.Stderr, "typecheck %s/%s: no package matches %v in %s\n", goos, goarch, flag.Args(), *dir)
		os.Exit(1)
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
		os.Exit(1)
	}
	fmt.Printf("typecheck %s/%s: %d packages type-check (%s) in %.0fs\n", goos, goarch, checked, *dir, time.Since(start).Seconds())
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
