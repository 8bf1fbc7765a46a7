package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kubelet-compat/kubelet-compat/pkg/regularfile"
)

// prepareRecord runs before record does anything else. It refuses a target
// that is not a regular file (a FIFO would block record for ever), takes the
// lock sweep takes (so that sweep cannot delete what record writes between
// its check and its delete), refuses to replace a file that is not a compat
// file unless --force, and removes the temporaries of interrupted records.
func (o *nodeOptions) prepareRecord(ctx context.Context, env Env) (release func(), err error) {
	path := o.compatPath()
	if err := refuseIrregularTarget(path); err != nil {
		return nil, err
	}
	release, err = o.lockCompatFile(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := refuseForeignFile(env, path, o.force); err != nil {
		release()
		return nil, err
	}
	removeStaleTemporaries(env, path)
	return release, nil
}

// refuseIrregularTarget refuses a path whose existing target is not a
// regular file, without opening it.
func refuseIrregularTarget(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("compat file: %w", err)
	}
	if fi.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s is %s, not a regular file: refusing to replace it (record writes a regular file; move it away or give another --file)", path, fileKind(fi.Mode()))
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "a symlink"
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// maxForeignCheck bounds what refuseForeignFile reads: a compat file holds a
// few KiB (the library refuses more than 4 MiB).
const maxForeignCheck = 4 << 20

// refuseForeignFile refuses to replace an existing file that does not parse
// as a compat file of any format this project wrote, unless force. It only
// needs to know what the file is: the kubelet's checks of a compat file
// (owner, mode) are existingHistory's.
func refuseForeignFile(env Env, path string, force bool) error {
	data, err := readExisting(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = parseAnyFormat(data)
	switch {
	case err == nil:
		return nil
	case force:
		warnf(env, "replacing %s, which is not a compat file (%v), as --force says", path, err)
		return nil
	}
	return fmt.Errorf("%s exists and is not a compat file (%v): refusing to replace it: move it away, or give --force", path, err)
}

// readExisting reads the start of the regular file at path without
// following a symlink or blocking on a FIFO swapped in since the Lstat.
func readExisting(path string) ([]byte, error) {
	data, err := regularfile.Read(path, maxForeignCheck, true)
	var nr *regularfile.NotRegularError
	if errors.As(err, &nr) {
		return nil, fmt.Errorf("%s is %s, not a regular file: refusing to replace it", path, fileKind(nr.Mode))
	}
	if err != nil {
		return nil, fmt.Errorf("reading the existing %s: %w", path, err)
	}
	return data, nil
}

// removeStaleTemporaries removes what interrupted records left: regular
// files named .<name>.tmp-* next to the compat file, owned by this user.
// Under the lock no record is writing one.
func removeStaleTemporaries(env Env, path string) {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+".tmp-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // writing the file reports the directory's problem
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || len(e.Name()) == len(prefix) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != env.Geteuid() {
			continue
		}
		if err := os.Remove(p); err != nil {
			warnf(env, "cannot remove %s, the temporary file of an interrupted record: %v", p, err)
			continue
		}
		warnf(env, "removed %s, the temporary file of an interrupted record", p)
	}
}
