package app

import (
	"errors"
	"fmt"
	"sort"
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

// shortenEchoes cuts the command-line arguments (and the values of
// --flag=value) that an error line repeats to maxEchoed characters around
// "...", as typed or as %q renders them. Text that did not come from the
// command line, such as a path read from /proc, is left alone.
func shortenEchoes(msg string, args []string) string {
	var long []string
	for _, a := range args {
		if i := strings.IndexByte(a, '='); strings.HasPrefix(a, "-") && i > 0 {
			long = append(long, a[i+1:])
		}
		long = append(long, a)
	}
	// Longest first: a flag's value must not cut the flag it is part of.
	sort.SliceStable(long, func(i, j int) bool { return len(long[i]) > len(long[j]) })
	for _, a := range long {
		r := []rune(a)
		if len(r) <= maxEchoed {
			continue
		}
		short := elide(r)
		msg = strings.ReplaceAll(msg, a, short)
		if quoted := strconv.Quote(a); quoted[1:len(quoted)-1] != a {
			q := strconv.Quote(short)
			msg = strings.ReplaceAll(msg, quoted[1:len(quoted)-1], q[1:len(q)-1])
		}
	}
	return msg
}

// elide keeps the head and the tail of a long value, where a path has its
// most telling parts: maxEchoed characters in all, "..." in the middle.
func elide(r []rune) string {
	head := (maxEchoed - 3) / 2
	tail := maxEchoed - 3 - head
	return string(r[:head]) + "..." + string(r[len(r)-tail:])
}
