package roll

import (
	"context"
	"path"
	"regexp"
)

// backup saves what kubeadm upgrade rewrites on this node, before it
// runs: the kubelet's configuration (KubeletFiles) and the static pods'
// manifests, written whole into BackupDir.new, then renamed.
func (r *run) backup() action {
	return action{"backup: what kubeadm rewrites", func(context.Context) error {
		if err := r.takeBackup(); err != nil {
			return dief("saving what kubeadm rewrites in %s: %v", BackupDir, err)
		}
		return nil
	}}
}

func (r *run) takeBackup() error {
	f := r.files
	tmp := BackupDir + ".new"
	if err := f.RemoveAll(tmp); err != nil {
		return err
	}
	if err := f.MkdirAll(tmp + "/kubelet"); err != nil {
		return err
	}
	for _, k := range KubeletFiles {
		if isFile(f, k) {
			if err := copyFile(f, k, tmp+"/kubelet/"+path.Base(k)); err != nil {
				return err
			}
		}
	}
	dirs := []string{tmp + "/kubelet"}
	if isDir(f, ManifestsDir) {
		if err := f.MkdirAll(tmp + "/manifests"); err != nil {
			return err
		}
		for _, n := range yamlFiles(f, ManifestsDir) {
			if err := copyFile(f, ManifestsDir+"/"+n, tmp+"/manifests/"+n); err != nil {
				return err
			}
		}
		dirs = append(dirs, tmp+"/manifests")
	}
	for _, d := range append(dirs, tmp) {
		if err := f.SyncDir(d); err != nil {
			return err
		}
	}
	if err := f.RemoveAll(BackupDir); err != nil {
		return err
	}
	if err := f.Rename(tmp, BackupDir); err != nil {
		return err
	}
	return f.SyncDir(RollDir)
}

// restore puts back what kubeadm rewrote (the backup): the kubelet's
// configuration, then the static pods' manifests, except an etcd manifest
// whose etcd minor version changed (a manifest does not downgrade etcd's
// data: kubeadm's own rollback restores its data backup for that).
func (r *run) restoreKubeletConfig() action {
	return action{"rollback: the kubelet's configuration", func(context.Context) error {
		if !isDir(r.files, BackupDir) {
			r.log("rollback: no backup in %s/backup: the kubelet's configuration and the manifests are left as they are", RollDir)
			return nil
		}
		for _, k := range KubeletFiles {
			if err := r.putBack(BackupDir+"/kubelet/"+path.Base(k), k, k); err != nil {
				return err
			}
		}
		return nil
	}}
}

func (r *run) restoreManifests() action {
	return action{"rollback: the static pods' manifests", func(context.Context) error {
		saved := BackupDir + "/manifests"
		if !isDir(r.files, saved) {
			return nil
		}
		done := map[string]bool{}
		for _, n := range append(yamlFiles(r.files, ManifestsDir), yamlFiles(r.files, saved)...) {
			if done[n] {
				continue
			}
			done[n] = true
			was, is := saved+"/"+n, ManifestsDir+"/"+n
			if n == "etcd.yaml" && isFile(r.files, was) && isFile(r.files, is) {
				if a, b := r.etcdMinor(was), r.etcdMinor(is); a != b {
					r.log("rollback: %s/etcd.yaml left at kubeadm's etcd %s (was %s): a manifest does not downgrade etcd's data", ManifestsDir, b, a)
					continue
				}
			}
			if err := r.putBack(was, is, is); err != nil {
				return err
			}
		}
		return nil
	}}
}

// putBack makes file what saved is (atomically, a dot file renamed over
// it), or removes file when nothing was saved (the roll wrote it), and
// says so.
func (r *run) putBack(saved, file, name string) error {
	f := r.files
	switch {
	case isFile(f, saved):
		if sameContent(f, saved, file) {
			return nil
		}
		if err := f.MkdirAll(path.Dir(file)); err != nil {
			return dief("the rollback failed: %s: %v (the next Job tries again)", name, err)
		}
		tmp := dotNew(file)
		if err := copyFile(f, saved, tmp); err != nil {
			return dief("the rollback failed: %s: %v (the next Job tries again)", name, err)
		}
		if err := f.Rename(tmp, file); err != nil {
			return dief("the rollback failed: %s: %v (the next Job tries again)", name, err)
		}
		r.log("rollback: %s put back as it was before the roll", name)
	case exists(f, file):
		if err := f.Remove(file); err != nil {
			return dief("the rollback failed: %s: %v (the next Job tries again)", name, err)
		}
		r.log("rollback: %s removed (the roll wrote it; there was none before)", name)
	}
	return nil
}

var etcdImageMinor = regexp.MustCompile(`image:.*etcd:v?([0-9]*\.[0-9]*)`)

// etcdMinor is MAJOR.MINOR of the etcd image a manifest of the node names.
func (r *run) etcdMinor(manifest string) string {
	data, err := r.files.ReadFile(manifest)
	if err != nil {
		return ""
	}
	for _, line := range lines(string(data)) {
		if m := etcdImageMinor.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}
