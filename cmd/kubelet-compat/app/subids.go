package app

import (
	"context"
	"errors"
	osexec "os/exec"
	"time"

	"github.com/kubelet-compat/kubelet-compat/cmd/kubelet-compat/internal/preflight"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// subIDsTimeout bounds each look-up: getent and getsubids may ask a remote
// NSS source.
const subIDsTimeout = 10 * time.Second

// hostSubIDs asks this host what kubelet 1.38 asks at its start (its
// getKubeletMappings): getent passwd kubelet, then, when the user exists
// and getsubids is on PATH, its subordinate UIDs and GIDs.
func hostSubIDs(ctx context.Context) preflight.SubIDs {
	var ids preflight.SubIDs
	getent, err := osexec.LookPath("getent")
	if err != nil {
		return ids // no getent: the kubelet takes the default range
	}
	lookup := &exec.Cmd{Name: getent, Args: []string{"passwd", "kubelet"}}
	switch err := runBounded(ctx, lookup); {
	case err == nil:
		ids.UserFound = true
	case exec.ExitCode(err) == 2: // getent: key not found
		return ids
	default:
		ids.LookupErr = err.Error()
		return ids
	}
	getsubids, err := osexec.LookPath("getsubids")
	if errors.Is(err, osexec.ErrNotFound) {
		return ids
	} else if err != nil {
		ids.RunErr = err.Error()
		return ids
	}
	ids.GetSubIDs = true
	uids, err := outputBounded(ctx, &exec.Cmd{Name: getsubids, Args: []string{"kubelet"}})
	if err != nil {
		ids.RunErr = err.Error()
		return ids
	}
	gids, err := outputBounded(ctx, &exec.Cmd{Name: getsubids, Args: []string{"-g", "kubelet"}})
	if err != nil {
		ids.RunErr = err.Error()
		return ids
	}
	ids.UIDs, ids.GIDs = string(uids), string(gids)
	return ids
}

func runBounded(ctx context.Context, c *exec.Cmd) error {
	_, err := outputBounded(ctx, c)
	return err
}

func outputBounded(ctx context.Context, c *exec.Cmd) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, subIDsTimeout)
	defer cancel()
	return c.Output(ctx)
}
