package nodeimage

import (
	"context"
	"io"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// docker runs the docker CLI with the caller's environment (DOCKER_HOST and
// the like): nothing here assumes a socket.
type docker struct {
	env []string
	log io.Writer // command lines and output
}

func (d docker) cmd(args ...string) *exec.Cmd {
	c := exec.Command("docker", args...)
	// The legacy builder: it needs no buildx plugin and no registry for
	// FROM scratch or FROM a local image.
	c.Env = append([]string{"DOCKER_BUILDKIT=0"}, d.env...)
	c.Log = d.log
	return c
}

func (d docker) run(ctx context.Context, args ...string) error {
	return d.cmd(args...).Run(ctx)
}

func (d docker) output(ctx context.Context, args ...string) (string, error) {
	c := d.cmd(args...)
	c.Log = nil // callers parse stdout; keep the log readable
	out, err := c.Output(ctx)
	return strings.TrimSpace(string(out)), err
}

// imageHash returns the HashLabel of ref, and false when ref does not exist.
func (d docker) imageHash(ctx context.Context, ref string) (string, bool) {
	out, err := d.output(ctx, "image", "inspect", "--format", `{{index .Config.Labels "`+HashLabel+`"}}`, ref)
	if err != nil {
		return "", false
	}
	return out, true
}
