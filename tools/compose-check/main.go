// compose-check loads a compose file the way `docker compose config` does (compose-go, the library
// Docker Compose itself uses: schema validation, interpolation, cross-references) and prints the
// normalized project as JSON, or the error and exit status 1. No Docker engine is needed.
//
//	go run . [-env KEY=VALUE ...] <docker-compose.yml>
//
// Profiles: -env COMPOSE_PROFILES=demo enables the services of the profile `demo`, as it does for
// `docker compose`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
)

type envFlags []string

func (e *envFlags) String() string     { return strings.Join(*e, ",") }
func (e *envFlags) Set(v string) error { *e = append(*e, v); return nil }

func main() {
	var env envFlags
	flag.Var(&env, "env", "KEY=VALUE to interpolate with (repeatable); the process environment is not used")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: compose-check [-env KEY=VALUE ...] <compose file>")
		os.Exit(2)
	}
	opts, err := cli.NewProjectOptions(
		[]string{flag.Arg(0)},
		cli.WithEnv(env),
		// As `docker compose`: services of a profile load only when COMPOSE_PROFILES names it.
		cli.WithDefaultProfiles(),
		cli.WithResolvedPaths(false),
		cli.WithNormalization(true),
		cli.WithConsistency(true),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := json.MarshalIndent(project, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
