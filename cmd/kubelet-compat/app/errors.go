package app

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// maxEchoed bounds how much of a value the user typed an error line repeats.
const maxEchoed = 80

// flagError rewrites pflag's "invalid argument X for --flag flag: ... X"
// into "--flag: ...", naming the bad value once.
func flagError(_ *cobra.Command, err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	name, cause := "--"+ive.GetFlag().Name, errors.Unwrap(ive)
	var own *flagValueError
	var num *strconv.NumError
	switch {
	case errors.As(cause, &own):
		return fmt.Errorf("%s: %v", name, own)
	case errors.As(cause, &num):
		return fmt.Errorf("%s: invalid value %q: %v", name, ive.GetValue(), num.Err)
	case cause == nil:
		return fmt.Errorf("%s: invalid value %q", name, ive.GetValue())
	}
	return fmt.Errorf("%s: invalid value %q: %v", name, ive.GetValue(), cause)
}

// flagValueError is the complaint of one of our flag values; it names the
// value itself.
type flagValueError struct{ msg string }

func (e *flagValueError) Error() string { return e.msg }

var (
	// quoted matches a Go-quoted string as %q renders it.
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	// flagToken matches a flag as typed (unknown flag: --x...).
	flagToken = regexp.MustCompile(`(^|\s)-[^\s]+`)
)

// shortenEchoes cuts the values an error line repeats from the command line
// to maxEchoed characters plus "...": quoted values (%q) and flags. Other
// text, such as paths, is left alone.
func shortenEchoes(s string) string {
	s = quoted.ReplaceAllStringFunc(s, func(q string) string {
		v, err := strconv.Unquote(q)
		if err != nil || len([]rune(v)) <= maxEchoed {
			return q
		}
		short := strconv.Quote(string([]rune(v)[:maxEchoed]))
		return strings.TrimSuffix(short, `"`) + `..."`
	})
	return flagToken.ReplaceAllStringFunc(s, func(tok string) string {
		r := []rune(tok)
		lead := 0
		if len(r) > 0 && r[0] != '-' {
			lead = 1 // the whitespace before the flag
		}
		if len(r)-lead <= maxEchoed {
			return tok
		}
		return string(r[:lead+maxEchoed]) + "..."
	})
}
