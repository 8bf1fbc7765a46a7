// Package docker is the e2e's Docker engine: the user's when one answers
// (DOCKER_HOST or the default socket), or a private dockerd the e2e starts
// from Debian's docker.io on its own containerd, data root and socket, and
// stops again. On machines whose capability bounding set lacks
// capabilities (no CAP_SYS_RESOURCE here) the private daemon's default
// runtime is e2e-oci-runtime, so that `docker run --privileged`, which
// kind always asks for, works; with every capability nothing is wrapped.
package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// Engine runs the docker CLI against one daemon.
type Engine struct {
	// Env is added to every docker command (DOCKER_HOST of a private
	// daemon); empty for the user's engine.
	Env []string
	// Private is true for a daemon the e2e started.
	Private bool
}

// Command is a docker command against the engine.
func (e *Engine) Command(args ...string) *exec.Cmd {
	return &exec.Cmd{Name: "docker", Args: args, Env: e.Env}
}

// Host is the engine's DOCKER_HOST ("" for the default).
func (e *Engine) Host() string {
	for _, kv := range e.Env {
		if v, ok := strings.CutPrefix(kv, "DOCKER_HOST="); ok {
			return v
		}
	}
	return ""
}

// Info is what the e2e reads of `docker info`.
type Info struct {
	ServerVersion   string `json:"ServerVersion"`
	CgroupDriver    string `json:"CgroupDriver"`
	CgroupVersion   string `json:"CgroupVersion"`
	Driver          string `json:"Driver"`
	DefaultRuntime  string `json:"DefaultRuntime"`
	OperatingSystem string `json:"OperatingSystem"`
	// DockerRootDir holds the engine's images and the containers'
	// volumes (a kind node's /var).
	DockerRootDir string `json:"DockerRootDir"`
}

func (i Info) String() string {
	return fmt.Sprintf("Docker %s, %s driver, cgroup %s v%s, default runtime %s", i.ServerVersion, i.Driver, i.CgroupDriver, i.CgroupVersion, i.DefaultRuntime)
}

// Info asks the engine who it is.
func (e *Engine) Info(ctx context.Context) (Info, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := e.Command("info", "--format", "{{json .}}").Output(ctx)
	if err != nil {
		return Info{}, err
	}
	var info Info
	if err := json.Unmarshal(out, &info); err != nil {
		return Info{}, fmt.Errorf("docker info: %w", err)
	}
	if info.ServerVersion == "" {
		return Info{}, fmt.Errorf("docker info: no server answered")
	}
	return info, nil
}

// ImageExists reports whether the engine holds an image of that name.
func (e *Engine) ImageExists(ctx context.Context, ref string) bool {
	_, err := e.Command("image", "inspect", "--format", "{{.Id}}", ref).Output(ctx)
	return err == nil
}
