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
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// saMountPath is where a pod's ServiceAccount token, CA and namespace are mounted.
const saMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// saVolumeName names the token volume the kubelet adds itself when automount is on but the
// ServiceAccount admission plugin did not inject one.
const saVolumeName = "localcluster-serviceaccount"

// volumeSet is a pod's volumes rendered into its folder.
type volumeSet struct {
	paths      map[string]string // volume name -> host folder (or hostPath)
	readOnly   map[string]bool   // ConfigMap, Secret, projected and downward API volumes
	tokens     map[string]time.Time
	implicitSA bool
}

// imageFolder finds the local folder of an image by the longest matching prefix, which must
// end at the image's end or before a ':' or '@'.
func (k *kubelet) imageFolder(image string) (string, []string, bool) {
	best := ""
	for prefix := range k.images {
		if !strings.HasPrefix(image, prefix) || len(prefix) <= len(best) {
			continue
		}
		if rest := image[len(prefix):]; rest == "" || rest[0] == ':' || rest[0] == '@' {
			best = prefix
		}
	}
	if best == "" {
		return "", nil, false
	}
	entry := k.entrypoints[best]
	if entry == nil {
		for prefix, e := range k.entrypoints {
			if prefix == best || strings.HasPrefix(image, prefix+":") || image == prefix {
				entry = e
			}
		}
	}
	return k.images[best], entry, true
}

func (pw *podWorker) prepareVolumes(ctx context.Context) error {
	pod := pw.snapshotPod()
	vs := &volumeSet{paths: map[string]string{}, readOnly: map[string]bool{}, tokens: map[string]time.Time{}}
	pw.mu.Lock()
	if pw.volumes != nil {
		vs.tokens = pw.volumes.tokens
	}
	pw.mu.Unlock()
	for i := range pod.Spec.Volumes {
		if err := pw.renderVolume(ctx, pod, &pod.Spec.Volumes[i], vs); err != nil {
			return fmt.Errorf("volume %q: %w", pod.Spec.Volumes[i].Name, err)
		}
	}
	if pw.needsImplicitSA(pod) {
		v := implicitSAVolume()
		if err := pw.renderVolume(ctx, pod, &v, vs); err != nil {
			return fmt.Errorf("ServiceAccount token volume: %w", err)
		}
		vs.implicitSA = true
	}
	pw.mu.Lock()
	pw.volumes = vs
	pw.mu.Unlock()
	return nil
}

// refreshVolumes re-renders ConfigMap, Secret and projected volumes every 20 seconds, like
// the kubelet's sync, and renews tokens after 80% of their lifetime.
func (pw *podWorker) refreshVolumes(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-pw.stopCh:
			return
		case <-time.After(20 * time.Second):
		}
		if err := pw.prepareVolumes(ctx); err != nil && ctx.Err() == nil {
			pw.logf("refreshing volumes: %v", err)
		}
	}
}

// needsImplicitSA: automount is on (pod or ServiceAccount default) and some container has no
// mount at the standard token path.
func (pw *podWorker) needsImplicitSA(pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil && !*pod.Spec.AutomountServiceAccountToken {
		return false
	}
	if pod.Spec.AutomountServiceAccountToken == nil {
		sa, err := pw.k.client.CoreV1().ServiceAccounts(pod.Namespace).Get(context.Background(), serviceAccountName(pod), metav1.GetOptions{})
		if err == nil && sa.AutomountServiceAccountToken != nil && !*sa.AutomountServiceAccountToken {
			return false
		}
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		found := false
		for _, m := range c.VolumeMounts {
			if filepath.Clean(m.MountPath) == saMountPath {
				found = true
			}
		}
		if !found {
			return true
		}
	}
	return false
}

func implicitSAVolume() corev1.Volume {
	exp := int64(3607)
	return corev1.Volume{Name: saVolumeName, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

func serviceAccountName(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName != "" {
		return pod.Spec.ServiceAccountName
	}
	return "default"
}

func (pw *podWorker) renderVolume(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, vs *volumeSet) error {
	dir := filepath.Join(pw.dir, "volumes", v.Name)
	// fsGroup: like the kubelet, volume files belong to that group and are group-readable,
	// so a container that runs as another user but in that group reads them.
	gid := -1
	if psc := pod.Spec.SecurityContext; psc != nil && psc.FSGroup != nil {
		gid = int(*psc.FSGroup)
	}
	mode := func(m *int32) os.FileMode {
		if m != nil {
			return os.FileMode(*m) & 0o777
		}
		return 0o644
	}
	switch {
	case v.EmptyDir != nil:
		if shared := pw.k.sharedDirs[v.Name]; shared != "" {
			dir = shared
		}
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return err
		}
		if gid >= 0 {
			if err := os.Chown(dir, -1, gid); err != nil {
				return err
			}
		}
		vs.paths[v.Name] = dir
	case v.HostPath != nil:
		if t := v.HostPath.Type; t != nil && *t == corev1.HostPathDirectoryOrCreate {
			if err := os.MkdirAll(v.HostPath.Path, 0o755); err != nil {
				return err
			}
		}
		if _, err := os.Stat(v.HostPath.Path); err != nil {
			return fmt.Errorf("hostPath: %w", err)
		}
		vs.paths[v.Name] = v.HostPath.Path
	case v.ConfigMap != nil:
		files, err := pw.configMapFiles(ctx, pod.Namespace, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, mode(v.ConfigMap.DefaultMode))
		if err != nil {
			return err
		}
		if err := writeFiles(dir, files, gid); err != nil {
			return err
		}
		vs.paths[v.Name], vs.readOnly[v.Name] = dir, true
	case v.Secret != nil:
		files, err := pw.secretFiles(ctx, pod.Namespace, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, mode(v.Secret.DefaultMode))
		if err != nil {
			return err
		}
		if err := writeFiles(dir, files, gid); err != nil {
			return err
		}
		vs.paths[v.Name], vs.readOnly[v.Name] = dir, true
	case v.DownwardAPI != nil:
		files, err := pw.downwardFiles(pod, v.DownwardAPI.Items, mode(v.DownwardAPI.DefaultMode))
		if err != nil {
			return err
		}
		if err := writeFiles(dir, files, gid); err != nil {
			return err
		}
		vs.paths[v.Name], vs.readOnly[v.Name] = dir, true
	case v.Projected != nil:
		def := mode(v.Projected.DefaultMode)
		files := map[string]fileContent{}
		for _, src := range v.Projected.Sources {
			var part map[string]fileContent
			var err error
			switch {
			case src.ServiceAccountToken != nil:
				part, err = pw.tokenFile(ctx, pod, src.ServiceAccountToken, filepath.Join(dir, src.ServiceAccountToken.Path), vs, def)
			case src.ConfigMap != nil:
				part, err = pw.configMapFiles(ctx, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, def)
			case src.Secret != nil:
				part, err = pw.secretFiles(ctx, pod.Namespace, src.Secret.Name, src.Secret.Items, src.Secret.Optional, def)
			case src.DownwardAPI != nil:
				part, err = pw.downwardFiles(pod, src.DownwardAPI.Items, def)
			default:
				err = fmt.Errorf("projected source not supported by the local cluster (only serviceAccountToken, configMap, secret, downwardAPI)")
			}
			if err != nil {
				return err
			}
			maps.Copy(files, part)
		}
		if err := writeFiles(dir, files, gid); err != nil {
			return err
		}
		vs.paths[v.Name], vs.readOnly[v.Name] = dir, true
	default:
		return fmt.Errorf("volume type not supported by the local cluster (use emptyDir, hostPath, configMap, secret, downwardAPI or projected)")
	}
	return nil
}

type fileContent struct {
	data []byte
	mode os.FileMode
	keep bool // token still fresh: leave the file as it is
}

// writeFiles writes a volume's files below dir; gid >= 0 (the pod's fsGroup) makes the
// folder and files belong to that group, and the files group-readable.
func writeFiles(dir string, files map[string]fileContent, gid int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if gid >= 0 {
		if err := os.Chown(dir, -1, gid); err != nil {
			return err
		}
	}
	for rel, f := range files {
		if f.keep {
			continue
		}
		if strings.HasPrefix(filepath.Clean(rel), "..") || filepath.IsAbs(rel) {
			return fmt.Errorf("path %q leaves the volume", rel)
		}
		mode := f.mode
		if gid >= 0 {
			mode |= 0o040
		}
		if err := writeFileAtomic(filepath.Join(dir, rel), f.data, mode, gid); err != nil {
			return err
		}
	}
	return nil
}

// writeFileAtomic replaces a file by renaming a complete copy over it, so a process never
// reads half a file (bind mounts show the folder, so renames inside it are visible).
func writeFileAtomic(path string, data []byte, mode os.FileMode, gid int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if gid >= 0 {
		if err := os.Chown(filepath.Dir(path), -1, gid); err != nil {
			return err
		}
	}
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		if err := os.Chown(path, -1, gid); err != nil {
			return err
		}
		return os.Chmod(path, mode)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chown(tmp.Name(), -1, gid); err != nil { // -1 keeps the group
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func keyFiles(kind, name string, data map[string][]byte, items []corev1.KeyToPath, optional bool, def os.FileMode) (map[string]fileContent, error) {
	out := map[string]fileContent{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = fileContent{data: v, mode: def}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s %q has no key %q", kind, name, it.Key)
		}
		m := def
		if it.Mode != nil {
			m = os.FileMode(*it.Mode) & 0o777
		}
		out[it.Path] = fileContent{data: v, mode: m}
	}
	return out, nil
}

func (pw *podWorker) configMapFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) (map[string]fileContent, error) {
	opt := optional != nil && *optional
	cm, err := pw.k.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && opt {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("configmap %q: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	maps.Copy(data, cm.BinaryData)
	return keyFiles("configmap", name, data, items, opt, def)
}

func (pw *podWorker) secretFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool, def os.FileMode) (map[string]fileContent, error) {
	opt := optional != nil && *optional
	s, err := pw.k.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && opt {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	return keyFiles("secret", name, s.Data, items, opt, def)
}

func (pw *podWorker) downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, def os.FileMode) (map[string]fileContent, error) {
	out := map[string]fileContent{}
	for _, it := range items {
		var val string
		var err error
		switch {
		case it.FieldRef != nil:
			val, err = pw.fieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			val, err = resourceValue(pod, it.ResourceFieldRef)
		default:
			err = fmt.Errorf("downwardAPI item %q has neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return nil, err
		}
		m := def
		if it.Mode != nil {
			m = os.FileMode(*it.Mode) & 0o777
		}
		out[it.Path] = fileContent{data: []byte(val), mode: m}
	}
	return out, nil
}

// tokenFile asks the TokenRequest API for a token of the pod's ServiceAccount, bound to the
// pod, and keeps it until 80% of its lifetime has passed.
func (pw *podWorker) tokenFile(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, path string, vs *volumeSet, def os.FileMode) (map[string]fileContent, error) {
	exp := int64(3600)
	if src.ExpirationSeconds != nil {
		exp = *src.ExpirationSeconds
	}
	if renew, ok := vs.tokens[path]; ok && time.Now().Before(renew) {
		return map[string]fileContent{src.Path: {keep: true}}, nil
	}
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	issued := time.Now()
	tr, err := pw.k.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, serviceAccountName(pod), req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for ServiceAccount %q: %w", serviceAccountName(pod), err)
	}
	life := tr.Status.ExpirationTimestamp.Sub(issued)
	vs.tokens[path] = issued.Add(life * 8 / 10)
	return map[string]fileContent{src.Path: {data: []byte(tr.Status.Token), mode: def}}, nil
}

// mount is one bind mount of a container.
type mount struct {
	src, dst string
	readOnly bool
	dir      bool // a folder (else a file, for a subPath file)
}

// mountsFor lists a container's bind mounts, parents before children (initScript creates
// missing mount points).
func (pw *podWorker) mountsFor(c *corev1.Container) ([]mount, error) {
	pw.mu.Lock()
	vs := pw.volumes
	pw.mu.Unlock()
	if vs == nil {
		return nil, fmt.Errorf("volumes are not ready")
	}
	var out []mount
	for _, vm := range c.VolumeMounts {
		src, ok := vs.paths[vm.Name]
		if !ok {
			return nil, fmt.Errorf("container %q mounts volume %q, which the pod does not have", c.Name, vm.Name)
		}
		if !filepath.IsAbs(vm.MountPath) {
			return nil, fmt.Errorf("container %q: mountPath %q is not absolute", c.Name, vm.MountPath)
		}
		if vm.SubPath != "" {
			if strings.HasPrefix(filepath.Clean(vm.SubPath), "..") || filepath.IsAbs(vm.SubPath) {
				return nil, fmt.Errorf("container %q: subPath %q leaves volume %q", c.Name, vm.SubPath, vm.Name)
			}
			src = filepath.Join(src, vm.SubPath)
			if _, err := os.Stat(src); os.IsNotExist(err) && !vs.readOnly[vm.Name] {
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, mount{src: src, dst: filepath.Clean(vm.MountPath), readOnly: vm.ReadOnly || vs.readOnly[vm.Name]})
	}
	if vs.implicitSA && !slices.ContainsFunc(out, func(m mount) bool { return m.dst == saMountPath }) {
		out = append(out, mount{src: vs.paths[saVolumeName], dst: saMountPath, readOnly: true})
	}
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Count(out[i].dst, "/") < strings.Count(out[j].dst, "/")
	})
	for i := range out {
		st, err := os.Stat(out[i].src)
		if err != nil {
			return nil, fmt.Errorf("container %q: mount source %s: %w", c.Name, out[i].src, err)
		}
		out[i].dir = st.IsDir()
	}
	return out, nil
}
