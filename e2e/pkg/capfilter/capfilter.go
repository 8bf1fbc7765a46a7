// Package capfilter removes from an OCI runtime spec the capabilities a
// process cannot grant because its capability bounding set lacks them.
//
// Docker's --privileged asks runc for every capability the daemon knows.
// Where the machine itself runs with a reduced bounding set (here: no
// CAP_SYS_RESOURCE), runc then fails with "unable to apply caps: operation
// not permitted". e2e-oci-runtime uses this package to drop exactly the
// missing ones from config.json (create) and from the process file (exec)
// before it execs runc; nothing else in the spec changes.
package capfilter

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Names lists the Linux capabilities by number (capability.h).
var Names = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// Set is a capability bit mask (bit n = capability n).
type Set uint64

// Has reports whether the set holds the named capability. Names this
// package does not know are reported as held: runc decides about them.
func (s Set) Has(name string) bool {
	for i, n := range Names {
		if n == name {
			return s&(1<<uint(i)) != 0
		}
	}
	return true
}

// Missing lists the known capabilities the set lacks.
func (s Set) Missing() []string {
	var out []string
	for i, n := range Names {
		if s&(1<<uint(i)) == 0 {
			out = append(out, n)
		}
	}
	return out
}

// Bounding reads the CapBnd line of a /proc/<pid>/status file.
func Bounding(statusPath string) (Set, error) { return Read(statusPath, "CapBnd") }

// Read reads one capability set (CapBnd, CapEff, ...) of a
// /proc/<pid>/status file.
func Read(statusPath, field string) (Set, error) {
	f, err := os.Open(statusPath)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s %q: %w", statusPath, field, v, err)
			}
			return Set(n), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no %s line", statusPath, field)
}

// capLists are the lists of an OCI process's "capabilities" object.
var capLists = []string{"bounding", "effective", "inheritable", "permitted", "ambient"}

// FilterProcess drops capabilities outside allowed from an OCI process
// object (config.json's "process", or runc exec's --process file). It
// reports whether anything was dropped. Every other field is kept as it
// was, unknown ones included.
func FilterProcess(process map[string]json.RawMessage, allowed Set) (bool, error) {
	raw, ok := process["capabilities"]
	if !ok || string(raw) == "null" {
		return false, nil
	}
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(raw, &caps); err != nil {
		return false, fmt.Errorf("process.capabilities: %w", err)
	}
	changed := false
	for _, list := range capLists {
		r, ok := caps[list]
		if !ok || string(r) == "null" {
			continue
		}
		var names []string
		if err := json.Unmarshal(r, &names); err != nil {
			return false, fmt.Errorf("process.capabilities.%s: %w", list, err)
		}
		kept := make([]string, 0, len(names))
		for _, n := range names {
			if allowed.Has(n) {
				kept = append(kept, n)
			}
		}
		if len(kept) == len(names) {
			continue
		}
		b, err := json.Marshal(kept)
		if err != nil {
			return false, err
		}
		caps[list], changed = b, true
	}
	if !changed {
		return false, nil
	}
	b, err := json.Marshal(caps)
	if err != nil {
		return false, err
	}
	process["capabilities"] = b
	return true, nil
}

// FilterSpecFile filters config.json's process in place.
func FilterSpecFile(path string, allowed Set) error {
	return rewrite(path, func(doc map[string]json.RawMessage) (bool, error) {
		raw, ok := doc["process"]
		if !ok {
			return false, nil
		}
		var process map[string]json.RawMessage
		if err := json.Unmarshal(raw, &process); err != nil {
			return false, fmt.Errorf("process: %w", err)
		}
		changed, err := FilterProcess(process, allowed)
		if err != nil || !changed {
			return false, err
		}
		b, err := json.Marshal(process)
		doc["process"] = b
		return true, err
	})
}

// FilterProcessFile filters a runc exec --process file in place.
func FilterProcessFile(path string, allowed Set) error {
	return rewrite(path, func(doc map[string]json.RawMessage) (bool, error) {
		return FilterProcess(doc, allowed)
	})
}

// rewrite replaces path atomically when edit changed the document.
func rewrite(path string, edit func(map[string]json.RawMessage) (bool, error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(f, 16<<20))
	st, statErr := f.Stat()
	f.Close()
	if err != nil {
		return err
	}
	if statErr != nil {
		return statErr
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	changed, err := edit(doc)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".capfilter-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// globalWithValue are runc's global flags that take a separate value.
var globalWithValue = map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true}

// Command finds runc's subcommand in args and the value of one of its
// flags (long and short forms, "--flag value" and "--flag=value").
func Command(args []string, long, short string) (cmd, value string) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		if globalWithValue[a] {
			i++
		}
	}
	if i >= len(args) {
		return "", ""
	}
	cmd = args[i]
	for j := i + 1; j < len(args); j++ {
		a := args[j]
		if a == "--" {
			break
		}
		if (a == long || (short != "" && a == short)) && j+1 < len(args) {
			return cmd, args[j+1]
		}
		if v, ok := strings.CutPrefix(a, long+"="); ok {
			return cmd, v
		}
	}
	return cmd, ""
}
