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
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerEnv is the process environment: a base PATH and HOSTNAME, the API server's
// service variables, POD_IP, then envFrom and env (later wins), with $(VAR) expansion.
func (pw *podWorker) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container) ([]string, error) {
	pw.mu.Lock()
	ip := pw.ip
	pw.mu.Unlock()
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	home := "/root"
	if uid, _, _, ok := (&container{pw: pw, spec: *c}).identity(); ok && uid != 0 {
		home = "/"
	}
	set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	set("HOSTNAME", pod.Name)
	set("HOME", home)
	set("KUBERNETES_SERVICE_HOST", pw.k.apiHost)
	set("KUBERNETES_SERVICE_PORT", pw.k.apiPort)
	set("KUBERNETES_SERVICE_PORT_HTTPS", pw.k.apiPort)
	set("KUBERNETES_PORT", "tcp://"+pw.k.apiHost+":"+pw.k.apiPort)
	set("POD_IP", ip)
	for _, ef := range c.EnvFrom {
		var data map[string]string
		switch {
		case ef.ConfigMapRef != nil:
			cm, err := pw.k.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ef.ConfigMapRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && ef.ConfigMapRef.Optional != nil && *ef.ConfigMapRef.Optional {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("envFrom configmap %q: %w", ef.ConfigMapRef.Name, err)
			}
			data = cm.Data
		case ef.SecretRef != nil:
			s, err := pw.k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ef.SecretRef.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && ef.SecretRef.Optional != nil && *ef.SecretRef.Optional {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("envFrom secret %q: %w", ef.SecretRef.Name, err)
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(ef.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, vals))
			continue
		}
		v, skip, err := pw.envValueFrom(ctx, pod, c, e)
		if err != nil {
			return nil, fmt.Errorf("env %s of container %q: %w", e.Name, c.Name, err)
		}
		if !skip {
			set(e.Name, v)
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out, nil
}

func (pw *podWorker) envValueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, e corev1.EnvVar) (string, bool, error) {
	src := e.ValueFrom
	switch {
	case src.FieldRef != nil:
		v, err := pw.fieldValue(pod, src.FieldRef.FieldPath)
		return v, false, err
	case src.ResourceFieldRef != nil:
		ref := *src.ResourceFieldRef
		if ref.ContainerName == "" {
			ref.ContainerName = c.Name
		}
		v, err := resourceValue(pod, &ref)
		return v, false, err
	case src.ConfigMapKeyRef != nil:
		r := src.ConfigMapKeyRef
		opt := r.Optional != nil && *r.Optional
		cm, err := pw.k.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && opt {
			return "", true, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("configmap %q: %w", r.Name, err)
		}
		v, ok := cm.Data[r.Key]
		if !ok {
			if b, okb := cm.BinaryData[r.Key]; okb {
				return string(b), false, nil
			}
			if opt {
				return "", true, nil
			}
			return "", false, fmt.Errorf("configmap %q has no key %q", r.Name, r.Key)
		}
		return v, false, nil
	case src.SecretKeyRef != nil:
		r := src.SecretKeyRef
		opt := r.Optional != nil && *r.Optional
		s, err := pw.k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && opt {
			return "", true, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("secret %q: %w", r.Name, err)
		}
		v, ok := s.Data[r.Key]
		if !ok {
			if opt {
				return "", true, nil
			}
			return "", false, fmt.Errorf("secret %q has no key %q", r.Name, r.Key)
		}
		return string(v), false, nil
	}
	return "", false, fmt.Errorf("valueFrom has no source")
}

// fieldValue resolves a downward API field path.
func (pw *podWorker) fieldValue(pod *corev1.Pod, path string) (string, error) {
	pw.mu.Lock()
	ip := pw.ip
	pw.mu.Unlock()
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pw.k.nodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return ip, nil
	case "status.hostIP", "status.hostIPs":
		return pw.k.hostIP, nil
	}
	for _, m := range []struct {
		prefix string
		values map[string]string
	}{{"metadata.labels", pod.Labels}, {"metadata.annotations", pod.Annotations}} {
		if rest, ok := strings.CutPrefix(path, m.prefix+"['"); ok {
			if key, ok := strings.CutSuffix(rest, "']"); ok {
				return m.values[key], nil
			}
		}
	}
	return "", fmt.Errorf("fieldRef %q is not supported", path)
}

func formatMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// resourceValue resolves a resourceFieldRef; a missing limit means the node's allocatable.
func resourceValue(pod *corev1.Pod, ref *corev1.ResourceFieldSelector) (string, error) {
	var ctr *corev1.Container
	for i, c := range slices.Concat(pod.Spec.Containers, pod.Spec.InitContainers) {
		if c.Name == ref.ContainerName {
			all := slices.Concat(pod.Spec.Containers, pod.Spec.InitContainers)
			ctr = &all[i]
		}
	}
	if ctr == nil {
		return "", fmt.Errorf("resourceFieldRef names unknown container %q", ref.ContainerName)
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		name, kind = ref.Resource, "limits"
	}
	list := ctr.Resources.Limits
	if kind == "requests" {
		list = ctr.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok || q.IsZero() {
		switch name {
		case "cpu":
			if kind == "requests" {
				q = resource.MustParse("0")
			} else {
				q = *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI)
			}
		case "memory":
			if kind == "requests" {
				q = resource.MustParse("0")
			} else {
				q = resource.MustParse("16Gi")
			}
		case "ephemeral-storage":
			q = resource.MustParse("100Gi")
		default:
			return "", fmt.Errorf("resourceFieldRef %q is not supported", ref.Resource)
		}
	}
	div := ref.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	n, d := q.MilliValue(), div.MilliValue()
	return strconv.FormatInt((n+d-1)/d, 10), nil
}
