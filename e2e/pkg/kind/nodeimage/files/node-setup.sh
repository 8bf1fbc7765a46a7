#!/bin/bash
# Runs inside the node image's build container (entrypoint sleep, no
# systemd): installs the version's .debs, selects it, preloads its images.
# Arguments: the Kubernetes version (1.20.15); files in /kind/build.
set -euo pipefail
version=$1
cd /kind/build

# As a Debian operator installs them; the maintainer scripts find no
# running systemd (they tolerate that) and start nothing.
dpkg -i ./*.deb
kubernetes-select all "$version"
for f in /usr/bin/kubelet /usr/bin/kubeadm /usr/bin/kubectl \
         /usr/lib/systemd/system/kubelet.service /usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf; do
  [[ -e $f ]] || { echo "node-setup: $f is missing after the package install" >&2; exit 1; }
done
kubelet --version | grep -q "v$version" || { echo "node-setup: /usr/bin/kubelet is not $version" >&2; exit 1; }
kubeadm version -o short | grep -q "v$version" || { echo "node-setup: /usr/bin/kubeadm is not $version" >&2; exit 1; }
systemctl enable kubelet.service
echo -n "v$version" >/kind/version
install -m 0644 containerd-config.toml /etc/containerd/config.toml

# Preload the images into containerd's k8s.io namespace, as kind does:
# content only (--no-unpack); the CRI plugin unpacks an image on first use.
# The CRI plugin is off here: only the content store and metadata matter.
mkdir -p /run/containerd-build
cat >/run/containerd-build/config.toml <<CFG
version = 2
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "/run/containerd-build/containerd.sock"
CFG
containerd --config /run/containerd-build/config.toml >/run/containerd-build/log 2>&1 &
pid=$!
for _ in $(seq 100); do
  [[ -S /run/containerd-build/containerd.sock ]] && break
  sleep 0.1
done
ctr() { command ctr --address /run/containerd-build/containerd.sock -n k8s.io "$@"; }
ctr images import --no-unpack --all-platforms images.tar
ctr images ls -q >imported
missing=0
while read -r ref; do
  grep -qxF "$ref" imported || { echo "node-setup: $ref missing after the import" >&2; missing=1; }
done <image-refs
kill "$pid"
wait "$pid" || true
[[ $missing == 0 ]] || { cat /run/containerd-build/log >&2; exit 1; }
rm -rf /run/containerd-build /kind/build /var/lib/containerd/tmpmounts
