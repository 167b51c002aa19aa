package options

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// intSetting is a whole-number setting of the options O: its flag, its
// environment variable, its built-in default and the least value it takes.
type intSetting[O any] struct {
	flag, env string
	def       int
	min       int
	usage     string
	dst       func(*O) *int
}

// bindInts defines the flags of settings on fs, each defaulting from its
// environment variable, then from its built-in default, and returns the
// environment variables that are not numbers (for Validate to report:
// BindFlags cannot fail).
func bindInts[O any](fs *flag.FlagSet, o *O, settings []intSetting[O]) error {
	var errs []error
	for _, s := range settings {
		def, err := envDefault(s.env, s.def, strconv.Atoi, "a number")
		errs = append(errs, err)
		fs.IntVar(s.dst(o), s.flag, def, fmt.Sprintf("%s (env %s)", s.usage, s.env))
	}
	return errors.Join(errs...)
}

// envDefault is a flag's default: its environment variable's value when set
// and not empty, else def. A value parse refuses leaves def and is an error
// naming the variable: it is not what (a number, a duration).
func envDefault[T any](env string, def T, parse func(string) (T, error), what string) (T, error) {
	v, ok := os.LookupEnv(env)
	if !ok || v == "" {
		return def, nil
	}
	parsed, err := parse(v)
	if err != nil {
		return def, fmt.Errorf("%s=%q is not %s", env, v, what)
	}
	return parsed, nil
}

// validateInts reports every setting below its least value, naming its
// flag and environment variable.
func validateInts[O any](o *O, settings []intSetting[O]) []error {
	var errs []error
	for _, s := range settings {
		if v := *s.dst(o); v < s.min {
			errs = append(errs, fmt.Errorf("--%s (%s) must be at least %d, got %d", s.flag, s.env, s.min, v))
		}
	}
	return errs
}

// parseBool accepts what LEADER_ELECT and the SDK's boolean variables do.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return false, errors.New("want true or false")
}
