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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// hostIP is the Node's address in the loopback mode; pods get PodIPPrefix + 2..254.
const hostIP = "127.0.0.1"

type kubeletConfig struct {
	client           kubernetes.Interface
	nodeName         string
	podIPPrefix      string
	hostIP           string
	netns            *netNS // nil: pods run in the machine's network namespace
	apiHost, apiPort string
	caPEM            []byte
	dir              string
	images           map[string]string
	entrypoints      map[string][]string
	sharedDirs       map[string]string // emptyDir volume name → one host folder for all pods
	backoff          time.Duration
	shutdown         time.Duration
	logf             func(string, ...any)
}

// kubelet is the process kubelet: it registers one Node, binds every unscheduled pod to it
// (no scheduler runs) and runs the pods bound to it through one podWorker each.
type kubelet struct {
	kubeletConfig
	ctx      context.Context
	cancel   context.CancelFunc
	factory  informers.SharedInformerFactory
	mu       sync.Mutex
	workers  map[types.UID]*podWorker
	binding  map[types.UID]bool
	finished map[types.UID]bool // pods whose worker ended; late informer events must not restart them
	usedIPs  map[int]types.UID
	stopping bool
	wg       sync.WaitGroup
}

func newKubelet(cfg kubeletConfig) (*kubelet, error) {
	if err := os.Chmod(cfg.dir, 0o755); err != nil {
		return nil, fmt.Errorf("making %s traversable for non-root pods: %w", cfg.dir, err)
	}
	return &kubelet{
		kubeletConfig: cfg,
		workers:       map[types.UID]*podWorker{},
		binding:       map[types.UID]bool{},
		finished:      map[types.UID]bool{},
		usedIPs:       map[int]types.UID{},
	}, nil
}

func (k *kubelet) start(ctx context.Context) error {
	k.ctx, k.cancel = context.WithCancel(ctx)
	if err := k.registerNode(ctx); err != nil {
		return err
	}
	k.factory = informers.NewSharedInformerFactory(k.client, 0)
	inf := k.factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.onPod,
		UpdateFunc: func(_, obj any) { k.onPod(obj) },
		DeleteFunc: k.onPodDelete,
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	k.factory.Start(k.ctx.Done())
	for typ, ok := range k.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing the %v informer", typ)
		}
	}
	k.logf("process kubelet running node %s", k.nodeName)
	return nil
}

// registerNode creates the Node, marks it Ready with the loopback address and removes the
// not-ready taint that the TaintNodesByCondition admission plugin adds on creation.
func (k *kubelet) registerNode(ctx context.Context) error {
	cpu := resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *cpu,
		corev1.ResourceMemory:           resource.MustParse("16Gi"),
		corev1.ResourcePods:             resource.MustParse("250"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: k.nodeName,
		Labels: map[string]string{
			"kubernetes.io/hostname": k.nodeName, "kubernetes.io/os": "linux",
			"kubernetes.io/arch": goruntime.GOARCH, "node.kubernetes.io/instance-type": "localcluster",
		},
	}}
	created, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating Node %s: %w", k.nodeName, err)
	}
	ts := now()
	created.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "localcluster process kubelet is posting ready status", LastHeartbeatTime: ts, LastTransitionTime: ts},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: ts, LastTransitionTime: ts},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: ts, LastTransitionTime: ts},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: ts, LastTransitionTime: ts},
		},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: k.hostIP}, {Type: corev1.NodeHostName, Address: k.nodeName}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion: "v1.37.2-localcluster", OperatingSystem: "linux", Architecture: goruntime.GOARCH,
			ContainerRuntimeVersion: "localcluster://process",
		},
	}
	updated, err := k.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("marking Node %s Ready: %w", k.nodeName, err)
	}
	if len(updated.Spec.Taints) > 0 {
		updated.Spec.Taints = nil
		if _, err := k.client.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("removing the not-ready taint of Node %s: %w", k.nodeName, err)
		}
	}
	return nil
}

func (k *kubelet) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName == "" {
		if pod.DeletionTimestamp == nil {
			k.bind(pod)
		}
		return
	}
	if pod.Spec.NodeName != k.nodeName {
		return
	}
	k.mu.Lock()
	w := k.workers[pod.UID]
	if w == nil {
		if k.stopping || k.finished[pod.UID] {
			k.mu.Unlock()
			return
		}
		w = newPodWorker(k, pod)
		k.workers[pod.UID] = w
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			w.run()
			k.mu.Lock()
			delete(k.workers, pod.UID)
			k.finished[pod.UID] = true
			k.mu.Unlock()
		}()
	}
	k.mu.Unlock()
	w.update(pod)
}

func (k *kubelet) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	w := k.workers[pod.UID]
	delete(k.finished, pod.UID)
	k.mu.Unlock()
	if w != nil {
		w.apiDeleted()
	}
}

// bind assigns an unscheduled pod to the node with a Binding, retrying briefly on errors.
func (k *kubelet) bind(pod *corev1.Pod) {
	k.mu.Lock()
	if k.binding[pod.UID] || k.stopping {
		k.mu.Unlock()
		return
	}
	k.binding[pod.UID] = true
	k.mu.Unlock()
	go func() {
		defer func() {
			k.mu.Lock()
			delete(k.binding, pod.UID)
			k.mu.Unlock()
		}()
		b := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: k.nodeName},
		}
		for attempt := 0; attempt < 5; attempt++ {
			err := k.client.CoreV1().Pods(pod.Namespace).Bind(k.ctx, b, metav1.CreateOptions{})
			if err == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err) || k.ctx.Err() != nil {
				return
			}
			k.logf("binding pod %s/%s: %v", pod.Namespace, pod.Name, err)
			select {
			case <-k.ctx.Done():
				return
			case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
			}
		}
	}()
}

func (k *kubelet) allocateIP(uid types.UID) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for n := 2; n <= 254; n++ {
		if _, used := k.usedIPs[n]; !used {
			k.usedIPs[n] = uid
			return fmt.Sprintf("%s%d", k.podIPPrefix, n), nil
		}
	}
	return "", errors.New("no free pod address left (253 pods)")
}

func (k *kubelet) releaseIP(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for n, u := range k.usedIPs {
		if u == uid {
			delete(k.usedIPs, n)
		}
	}
}

// pids lists the process ids of all running containers.
func (k *kubelet) pids() []int {
	k.mu.Lock()
	ws := make([]*podWorker, 0, len(k.workers))
	for _, w := range k.workers {
		ws = append(ws, w)
	}
	k.mu.Unlock()
	var out []int
	for _, w := range ws {
		out = append(out, w.pids()...)
	}
	sort.Ints(out)
	return out
}

// stop terminates every pod's processes (SIGTERM, grace, SIGKILL) and waits for the workers.
func (k *kubelet) stop() error {
	k.mu.Lock()
	k.stopping = true
	ws := make([]*podWorker, 0, len(k.workers))
	for _, w := range k.workers {
		ws = append(ws, w)
	}
	k.mu.Unlock()
	for _, w := range ws {
		w.terminate(k.shutdown, false)
	}
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-time.After(k.shutdown + 30*time.Second):
		err = errors.New("pod workers did not stop in time")
	}
	if k.cancel != nil {
		k.cancel()
	}
	if k.factory != nil {
		k.factory.Shutdown()
	}
	return err
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

func (k *kubelet) podDir(pod *corev1.Pod) string { return podDir(k.dir, pod) }

// podDir is the folder of a pod's volumes and files under the cluster folder.
func podDir(clusterDir string, pod *corev1.Pod) string {
	return filepath.Join(clusterDir, "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}
