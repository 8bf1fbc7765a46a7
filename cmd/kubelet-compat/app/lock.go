package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/filelock"
)

// defaultLockTimeout bounds the wait for another record or sweep: sweep
// holds the lock while it asks the kubelet binary, the runtime and the API
// server, each bounded to 10 to 30 s.
const defaultLockTimeout = 2 * time.Minute

// lockCompatFile takes the lock that record and sweep hold while they check
// and change the compat file at path: <dir>/.<name>.lock.
func (o *nodeOptions) lockCompatFile(ctx context.Context, path string) (release func(), err error) {
	l, err := filelock.Acquire(ctx, filelock.PathFor(path), o.lockTimeout)
	if err != nil {
		return nil, err
	}
	return func() { l.Release() }, nil
}

// lockBridgeState takes the lock of etcd-bridge's state,
// <state-dir>/.state.lock, for the whole bridge: two etcd-bridge never edit
// the manifest at once (a Job and an operator, or two Jobs).
func (o *etcdBridgeOptions) lockBridgeState(ctx context.Context) (release func(), err error) {
	l, err := filelock.Acquire(ctx, filelock.PathFor(filepath.Join(o.stateDir, bridgeStateFile)), o.lockTimeout)
	if err != nil {
		return nil, err
	}
	return func() { l.Release() }, nil
}

// lockForSweep takes the lock (not for --dry-run, which changes nothing) and
// returns the identity of the compat file sweep is about to check, or nil
// when there is none. Whatever sweep reads later is this file unless
// deleteChecked finds another one.
func (o *sweepOptions) lockForSweep(ctx context.Context, path string) (checked *filelock.Identity, release func(), err error) {
	release = func() {}
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil, release, nil
	}
	if !o.dryRun {
		if release, err = o.lockCompatFile(ctx, path); err != nil {
			return nil, nil, err
		}
	}
	id, err := filelock.Identify(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, release, nil
	case err != nil:
		release()
		return nil, nil, fmt.Errorf("compat file: %w", err)
	}
	return &id, release, nil
}

// deleteChecked deletes the compat file if it is still the file sweep
// checked; a file replaced meanwhile by something that did not take the
// lock is kept.
func deleteChecked(path string, checked *filelock.Identity) error {
	err := filelock.RemoveIfUnchanged(path, *checked)
	switch {
	case errors.Is(err, filelock.ErrChanged):
		return fmt.Errorf("not deleting %s: it changed while sweep checked it (%v); the next sweep checks the new file", path, err)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("deleting %s: %w", path, err)
	}
	return nil
}
