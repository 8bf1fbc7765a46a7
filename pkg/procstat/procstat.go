// Package procstat parses /proc/<pid>/stat: a process's parent, state and
// start time (clock ticks since boot, field 22), which with its PID names
// it for good within one boot (a recycled PID has another start time).
package procstat

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Stat is the part of /proc/<pid>/stat this project uses.
type Stat struct {
	PID        int
	Comm       string
	State      byte
	PPID       int
	StartTicks uint64
}

// Parse parses /proc/<pid>/stat. The command name is in parentheses and
// may itself hold spaces and parentheses: the fields follow the last ')'.
func Parse(data []byte) (Stat, error) {
	open := bytes.IndexByte(data, '(')
	closing := bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return Stat{}, fmt.Errorf("stat %q: no (comm)", truncate(data))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data[:open])))
	if err != nil {
		return Stat{}, fmt.Errorf("stat %q: pid: %w", truncate(data), err)
	}
	f := strings.Fields(string(data[closing+1:]))
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22 (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("stat %q: %d fields after comm", truncate(data), len(f))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Stat{}, fmt.Errorf("stat %q: ppid: %w", truncate(data), err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("stat %q: bad starttime: %w", truncate(data), err)
	}
	return Stat{PID: pid, Comm: string(data[open+1 : closing]), State: f[0][0], PPID: ppid, StartTicks: start}, nil
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}
