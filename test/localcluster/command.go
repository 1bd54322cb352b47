/*
Copyright 2026 The Conveyor Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// initScript runs inside the container's private mount namespace (unshare -m
// --propagation private, so nothing leaks to the host's mount table). It first opens every
// volume source, then bind-mounts them through /proc/self/fd in order, so that a volume
// mounted over a parent of another source (an emptyDir at /tmp while the cluster folder is
// under /tmp) cannot hide it. Missing mount points are created (on the host's filesystem
// when the parent is not a volume: an empty folder or file, left in place because other
// clusters may be using it, and never written into on the host). Then it makes the root
// read-only when asked, changes to the working folder and execs the container's command,
// which keeps the pid we started. Paths arrive as arguments, never inside the script text.
const initScript = `set -e
fds=(); dsts=(); kinds=(); types=(); rootro=; wd=
while [ "$1" != "--" ]; do
  case "$1" in
    bind|robind) exec {fd}<"$3"; kinds+=("$1"); types+=("$2"); fds+=("$fd"); dsts+=("$4"); shift 4 ;;
    rootro) rootro=1; shift ;;
    cd) wd="$2"; shift 2 ;;
    *) echo "localcluster-init: unknown step $1" >&2; exit 127 ;;
  esac
done
shift
for i in "${!fds[@]}"; do
  dst="${dsts[$i]}"
  if [ ! -e "$dst" ]; then
    if [ "${types[$i]}" = d ]; then mkdir -p "$dst"; else mkdir -p "$(dirname "$dst")"; : >"$dst"; fi
  fi
  mount --no-canonicalize --bind "/proc/self/fd/${fds[$i]}" "$dst"
  if [ "${kinds[$i]}" = robind ]; then mount -o remount,bind,ro "$dst"; fi
  fd="${fds[$i]}"; exec {fd}<&-
done
if [ -n "$rootro" ]; then mount -o remount,bind,ro /; fi
if [ -n "$wd" ]; then cd "$wd"; fi
exec "$@"
`

// container runs one container of a pod as a local process, restarting it per the pod's
// restartPolicy, and probes it.

// userPrefix returns the setpriv command that switches to the container's runAsUser and
// runAsGroup, or nothing to run as root.
func (c *container) userPrefix() []string {
	uid, gid, groups, ok := c.identity()
	if !ok {
		return nil
	}
	args := []string{"setpriv", "--reuid=" + strconv.FormatInt(uid, 10), "--regid=" + strconv.FormatInt(gid, 10), "--pdeathsig=KILL"}
	if len(groups) == 0 {
		return append(args, "--clear-groups", "--")
	}
	gs := make([]string, len(groups))
	for i, g := range groups {
		gs[i] = strconv.FormatInt(g, 10)
	}
	return append(args, "--groups="+strings.Join(gs, ","), "--")
}

// identity resolves runAsUser/runAsGroup from the container's and the pod's security
// contexts. runAsNonRoot without runAsUser means the image's USER; the Conveyor image runs
// as 65532 (distroless nonroot), so that is what we use.
func (c *container) identity() (uid, gid int64, groups []int64, ok bool) {
	pod := c.pw.snapshotPod()
	var runAsUser, runAsGroup *int64
	var nonRoot bool
	if psc := pod.Spec.SecurityContext; psc != nil {
		runAsUser, runAsGroup = psc.RunAsUser, psc.RunAsGroup
		nonRoot = psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
		groups = append(groups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			groups = append(groups, *psc.FSGroup)
		}
	}
	if sc := c.spec.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			runAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			runAsGroup = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
	}
	switch {
	case runAsUser != nil:
		uid = *runAsUser
	case nonRoot:
		uid = 65532
	default:
		return 0, 0, nil, false
	}
	gid = uid
	if runAsGroup != nil {
		gid = *runAsGroup
	}
	return uid, gid, groups, true
}

// buildCmd assembles `unshare -m --propagation private -- /bin/bash -c initScript ...` for
// the container: mounts, working folder, user and the command with its expanded args.
func (c *container) buildCmd(ctx context.Context) (*exec.Cmd, error) {
	pod := c.pw.snapshotPod()
	folder, entry, ok := c.pw.k.imageFolder(c.spec.Image)
	if !ok {
		return nil, fmt.Errorf("image %q maps to no local folder", c.spec.Image)
	}
	env, err := c.pw.containerEnv(ctx, pod, &c.spec)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	argv := c.spec.Command
	if len(argv) == 0 {
		argv = entry
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("container %q has no command and image %q no entrypoint (localcluster Options.Entrypoints)", c.spec.Name, c.spec.Image)
	}
	argv = append(expandAll(argv, vars), expandAll(c.spec.Args, vars)...)
	bin, err := resolveBinary(folder, argv[0])
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.spec.Name, err)
	}
	if uid, _, _, ok := c.identity(); ok && uid == 0 && c.nonRootRequired(pod) {
		return nil, fmt.Errorf("container %q has runAsNonRoot and would run as root (runAsUser 0)", c.spec.Name)
	}
	mounts, err := c.pw.mountsFor(&c.spec)
	if err != nil {
		return nil, err
	}
	// The image's binaries appear at /usr/local/bin, where Conveyor's Dockerfile puts them,
	// read-only and below the volumes (a volume over /usr/local/bin hides them, as in a
	// real container). The host's /usr/local/bin is hidden inside the pod.
	steps := []string{"robind", "d", folder, imageBinDir}
	for _, m := range mounts {
		kind := "bind"
		if m.readOnly {
			kind = "robind"
		}
		typ := "d"
		if !m.dir {
			typ = "f"
		}
		steps = append(steps, kind, typ, m.src, m.dst)
	}
	// readOnlyRootFilesystem: the root mount becomes read-only inside the namespace only.
	// Other host mounts under / (such as /dev, /proc, /tmp if it is its own filesystem)
	// stay as they are, so this is an approximation of a container's read-only root.
	if sc := c.spec.SecurityContext; sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		steps = append(steps, "rootro")
	}
	if c.spec.WorkingDir != "" {
		steps = append(steps, "cd", c.spec.WorkingDir)
	}
	steps = append(steps, "--")
	steps = append(steps, c.userPrefix()...)
	steps = append(steps, bin)
	steps = append(steps, argv[1:]...)
	args := append([]string{"-m", "--propagation", "private", "--", "/bin/bash", "-c", initScript, "localcluster-init"}, steps...)
	cmd := c.pw.k.netns.command("unshare", args...)
	cmd.Env = env
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.mu.Lock()
	c.env = env
	c.mu.Unlock()
	return cmd, nil
}

func (c *container) nonRootRequired(pod *corev1.Pod) bool {
	if sc := c.spec.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		return *sc.RunAsNonRoot
	}
	return pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.RunAsNonRoot != nil && *pod.Spec.SecurityContext.RunAsNonRoot
}

// imageBinDir is where a pod sees its image's binaries.
const imageBinDir = "/usr/local/bin"

// resolveBinary finds a command in the image folder by its base name (the image's
// /usr/local/bin/conveyor is folder/conveyor) and returns its path inside the pod; failing
// that, an absolute host path or a name on the host's PATH (for tests that use host tools).
func resolveBinary(folder, name string) (string, error) {
	if folder != "" {
		p := filepath.Join(folder, filepath.Base(name))
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return filepath.Join(imageBinDir, filepath.Base(name)), nil
		}
	}
	if filepath.IsAbs(name) {
		if _, err := os.Stat(name); err == nil {
			return name, nil
		}
	} else if !strings.Contains(name, "/") {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q: no %s in image folder %s", name, filepath.Base(name), folder)
}

// expandAll applies Kubernetes' $(VAR) expansion: $(NAME) becomes the variable's value when
// it is defined and stays as written otherwise; $$ is a literal $.
func expandAll(in []string, vars map[string]string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, vars)
	}
	return out
}

func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
