package app

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// positiveDuration is a duration flag that refuses zero and negative values
// instead of silently meaning a default.
type positiveDuration struct{ d *time.Duration }

func (p positiveDuration) String() string { return p.d.String() }
func (p positiveDuration) Type() string   { return "duration" }

func (p positiveDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return &flagValueError{msg: fmt.Sprintf("invalid duration %q (want e.g. 10s or 2m)", s)}
	}
	if d <= 0 {
		return &flagValueError{msg: fmt.Sprintf("must be positive, got %q", s)}
	}
	*p.d = d
	return nil
}

// positiveDurationVar defines a duration flag that must be positive.
func positiveDurationVar(fs *pflag.FlagSet, d *time.Duration, name string, value time.Duration, usage string) {
	*d = value
	fs.Var(positiveDuration{d}, name, usage)
}

// nonNegativeDuration is a duration flag that refuses negative values; zero
// means "none" and must be given explicitly.
type nonNegativeDuration struct{ d *time.Duration }

func (p nonNegativeDuration) String() string { return p.d.String() }
func (p nonNegativeDuration) Type() string   { return "duration" }

func (p nonNegativeDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return &flagValueError{msg: fmt.Sprintf("invalid duration %q (want e.g. 10m or 0s)", s)}
	}
	if d < 0 {
		return &flagValueError{msg: fmt.Sprintf("must not be negative, got %q", s)}
	}
	*p.d = d
	return nil
}

// nonNegativeDurationVar defines a duration flag that must not be negative.
func nonNegativeDurationVar(fs *pflag.FlagSet, d *time.Duration, name string, value time.Duration, usage string) {
	*d = value
	fs.Var(nonNegativeDuration{d}, name, usage)
}
