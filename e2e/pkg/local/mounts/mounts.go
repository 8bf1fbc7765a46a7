// Package mounts lists and removes the mounts at or under a directory (the
// e2e's root: containerd's rootfs and shm mounts, netns, the kubelet's
// volumes). Directories are compared cleaned, never as typed.
package mounts

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Mountinfo is the host's mount table.
const Mountinfo = "/proc/self/mountinfo"

// Under lists the mount points at or under dir in a mountinfo table,
// deepest (and, for one path, latest mounted) first.
func Under(r io.Reader, dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescape(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") || dir == "/" {
			out = append(out, mp)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	sort.SliceStable(out, func(i, j int) bool { return strings.Count(out[i], "/") > strings.Count(out[j], "/") })
	return out, sc.Err()
}

func unescape(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// List lists the host's mount points at or under dir.
func List(dir string) ([]string, error) {
	f, err := os.Open(Mountinfo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Under(f, dir)
}

// UnmountUnder unmounts everything at or under dir on the host (lazily
// when busy).
func UnmountUnder(dir string) error {
	for attempt := 0; attempt < 5; attempt++ {
		mps, err := List(dir)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		for _, mp := range mps {
			_ = Unmount(mp)
		}
	}
	mps, _ := List(dir)
	if len(mps) > 0 {
		return fmt.Errorf("still mounted under %s: %s", dir, strings.Join(mps, ", "))
	}
	return nil
}

// Unmount unmounts one mount point (lazily when busy).
func Unmount(mp string) error {
	if err := syscall.Unmount(mp, 0); err != nil {
		if err2 := syscall.Unmount(mp, syscall.MNT_DETACH); err2 != nil {
			return fmt.Errorf("unmount %s: %v; lazily: %w", mp, err, err2)
		}
	}
	return nil
}
