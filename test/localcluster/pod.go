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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// podWorker runs one pod: it prepares the volumes, runs the init containers in order, then
// the containers, writes the pod's status, and on deletion stops the processes within the
// grace period and removes the pod.
type podWorker struct {
	k        *kubelet
	uid      types.UID
	ns, name string
	dir      string

	mu          sync.Mutex
	pod         *corev1.Pod
	ip          string
	startTime   metav1.Time
	inits       []*container
	mains       []*container
	initsDone   bool
	mainsStart  bool
	volumesOK   bool
	waitReason  string // pod-level reason the containers cannot start yet
	waitMessage string
	initFailed  bool
	gone        bool // deleted from the API server
	stopOnce    sync.Once
	stopCh      chan struct{} // closed when termination begins
	grace       time.Duration
	deleteAfter bool
	dirty       chan struct{}
	done        chan struct{}
	volumes     *volumeSet
	restartHold chan struct{} // non-nil: crashed containers wait for it to close (hold.go)
}

func newPodWorker(k *kubelet, pod *corev1.Pod) *podWorker {
	pw := &podWorker{
		k: k, uid: pod.UID, ns: pod.Namespace, name: pod.Name,
		dir:    k.podDir(pod),
		pod:    pod,
		stopCh: make(chan struct{}),
		dirty:  make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	for i := range pod.Spec.InitContainers {
		pw.inits = append(pw.inits, newContainer(pw, pod.Spec.InitContainers[i], true))
	}
	for i := range pod.Spec.Containers {
		pw.mains = append(pw.mains, newContainer(pw, pod.Spec.Containers[i], false))
	}
	return pw
}

func (pw *podWorker) key() string { return pw.ns + "/" + pw.name }

func (pw *podWorker) logf(format string, args ...any) {
	pw.k.logf("pod %s: "+format, append([]any{pw.key()}, args...)...)
}

// update takes the informer's newest copy of the pod.
func (pw *podWorker) update(pod *corev1.Pod) {
	pw.mu.Lock()
	pw.pod = pod
	pw.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		grace := 30 * time.Second
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		pw.terminate(grace, true)
	}
}

// apiDeleted is called when the pod is gone from the API server (for example a forced
// deletion): the processes are killed without grace.
func (pw *podWorker) apiDeleted() {
	pw.mu.Lock()
	pw.gone = true
	pw.mu.Unlock()
	pw.terminate(0, false)
}

// terminate starts stopping the pod's processes: SIGTERM, then SIGKILL after grace. With
// deleteAfter the pod is deleted with grace 0 once every process is gone.
func (pw *podWorker) terminate(grace time.Duration, deleteAfter bool) {
	pw.stopOnce.Do(func() {
		pw.mu.Lock()
		pw.grace, pw.deleteAfter = grace, deleteAfter
		pw.mu.Unlock()
		pw.logf("terminating (grace %s)", grace)
		close(pw.stopCh)
	})
}

func (pw *podWorker) stopping() bool {
	select {
	case <-pw.stopCh:
		return true
	default:
		return false
	}
}

func (pw *podWorker) markDirty() {
	select {
	case pw.dirty <- struct{}{}:
	default:
	}
}

func (pw *podWorker) snapshotPod() *corev1.Pod {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.pod
}

func (pw *podWorker) run() {
	defer close(pw.done)
	defer pw.k.releaseIP(pw.uid)
	ctx, cancel := context.WithCancel(pw.k.ctx)
	defer cancel()
	statusDone := make(chan struct{})
	go func() { defer close(statusDone); pw.statusLoop(ctx) }()
	defer func() { cancel(); <-statusDone }()

	ip, err := pw.k.allocateIP(pw.uid)
	if err != nil {
		pw.setWaiting("PodIPUnavailable", err.Error())
		<-pw.stopCh
		pw.finish(ctx)
		return
	}
	pw.mu.Lock()
	pw.ip, pw.startTime = ip, now()
	pw.mu.Unlock()
	pw.markDirty()
	pw.logf("assigned %s", ip)

	if reason, msg := pw.checkImages(); reason != "" {
		pw.setWaiting(reason, msg)
		pw.logf("%s", msg)
		<-pw.stopCh
		pw.finish(ctx)
		return
	}
	// Volumes: retry until the ConfigMaps, Secrets and tokens they need exist.
	for {
		err := pw.prepareVolumes(ctx)
		if err == nil {
			break
		}
		pw.setWaiting("CreateContainerConfigError", err.Error())
		select {
		case <-pw.stopCh:
			pw.finish(ctx)
			return
		case <-time.After(2 * time.Second):
		}
	}
	pw.mu.Lock()
	pw.volumesOK, pw.waitReason, pw.waitMessage = true, "", ""
	pw.mu.Unlock()
	pw.markDirty()
	go pw.refreshVolumes(ctx)

	for _, c := range pw.inits {
		c.runLoop(ctx)
		if pw.stopping() {
			pw.finish(ctx)
			return
		}
		if !c.succeeded() {
			pw.mu.Lock()
			pw.initFailed = true
			pw.mu.Unlock()
			pw.markDirty()
			<-pw.stopCh
			pw.finish(ctx)
			return
		}
	}
	pw.mu.Lock()
	pw.initsDone, pw.mainsStart = true, true
	pw.mu.Unlock()
	pw.markDirty()
	var wg sync.WaitGroup
	for _, c := range pw.mains {
		wg.Add(1)
		go func() { defer wg.Done(); c.runLoop(ctx) }()
	}
	wg.Wait()
	pw.markDirty()
	<-pw.stopCh
	pw.finish(ctx)
}

// finish runs after every process stopped: delete the pod when its deletion was requested,
// and remove the pod folder.
func (pw *podWorker) finish(ctx context.Context) {
	pw.mu.Lock()
	deleteAfter, gone := pw.deleteAfter, pw.gone
	pw.mu.Unlock()
	pw.writeStatus(ctx)
	if deleteAfter && !gone {
		zero := int64(0)
		uid := pw.uid
		err := pw.k.client.CoreV1().Pods(pw.ns).Delete(ctx, pw.name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			pw.logf("deleting: %v", err)
		}
	}
	if err := os.RemoveAll(pw.dir); err != nil {
		pw.logf("removing pod folder: %v", err)
	}
	pw.logf("stopped")
}

func (pw *podWorker) setWaiting(reason, msg string) {
	pw.mu.Lock()
	pw.waitReason, pw.waitMessage = reason, msg
	pw.mu.Unlock()
	pw.markDirty()
}

// checkImages reports the first container whose image maps to no local folder.
func (pw *podWorker) checkImages() (string, string) {
	for _, c := range append(append([]*container{}, pw.inits...), pw.mains...) {
		if _, _, ok := pw.k.imageFolder(c.spec.Image); !ok {
			return "ImageNotMapped", fmt.Sprintf("container %q: image %q maps to no local folder (localcluster Options.Images); the process kubelet runs only mapped images", c.spec.Name, c.spec.Image)
		}
	}
	return "", ""
}

func (pw *podWorker) pids() []int {
	var out []int
	for _, c := range append(append([]*container{}, pw.inits...), pw.mains...) {
		if pid := c.pid(); pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

func (pw *podWorker) statusLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-pw.dirty:
		}
		pw.writeStatus(ctx)
		// Coalesce bursts of changes.
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeStatus computes the pod's status from the containers and writes it when it changed.
func (pw *podWorker) writeStatus(ctx context.Context) {
	pw.mu.Lock()
	gone := pw.gone
	pw.mu.Unlock()
	if gone || ctx.Err() != nil {
		return
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod := pw.snapshotPod()
		fresh := pod.DeepCopy()
		fresh.Status = pw.computeStatus(pod.Status)
		if equality.Semantic.DeepEqual(fresh.Status, pod.Status) {
			return nil
		}
		updated, err := pw.k.client.CoreV1().Pods(pw.ns).UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			latest, gerr := pw.k.client.CoreV1().Pods(pw.ns).Get(ctx, pw.name, metav1.GetOptions{})
			if gerr == nil && latest.UID == pw.uid {
				pw.mu.Lock()
				pw.pod = latest
				pw.mu.Unlock()
			}
			return err
		}
		if err != nil {
			return err
		}
		pw.mu.Lock()
		if pw.pod.ResourceVersion == pod.ResourceVersion {
			pw.pod = updated
		}
		pw.mu.Unlock()
		return nil
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		pw.logf("writing status: %v", err)
	}
}

func (pw *podWorker) computeStatus(old corev1.PodStatus) corev1.PodStatus {
	pw.mu.Lock()
	ip, start := pw.ip, pw.startTime
	initsDone, mainsStart, initFailed := pw.initsDone, pw.mainsStart, pw.initFailed
	waitReason, waitMessage := pw.waitReason, pw.waitMessage
	volumesOK := pw.volumesOK
	pw.mu.Unlock()

	st := corev1.PodStatus{QOSClass: old.QOSClass, HostIP: pw.k.hostIP, HostIPs: []corev1.HostIP{{IP: pw.k.hostIP}}}
	if ip != "" {
		st.PodIP, st.PodIPs, st.StartTime = ip, []corev1.PodIP{{IP: ip}}, &start
	}
	waitingDefault := "ContainerCreating"
	if waitReason != "" {
		waitingDefault = waitReason
	}
	for _, c := range pw.inits {
		st.InitContainerStatuses = append(st.InitContainerStatuses, c.status(waitingDefault, waitMessage))
	}
	mainWaiting, mainMsg := waitingDefault, waitMessage
	if !initsDone && len(pw.inits) > 0 && waitReason == "" {
		mainWaiting, mainMsg = "PodInitializing", ""
	}
	allReady, allStarted, allFinished, anyFailed := true, true, true, false
	for _, c := range pw.mains {
		cs := c.status(mainWaiting, mainMsg)
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		allReady = allReady && cs.Ready
		started, finished, code := c.progress()
		allStarted = allStarted && started
		allFinished = allFinished && finished
		anyFailed = anyFailed || (finished && code != 0)
	}
	switch {
	case initFailed:
		st.Phase = corev1.PodFailed
	case !mainsStart || !allStarted:
		st.Phase = corev1.PodPending
	case allFinished && anyFailed:
		st.Phase = corev1.PodFailed
	case allFinished:
		st.Phase = corev1.PodSucceeded
	default:
		st.Phase = corev1.PodRunning
	}
	if st.Phase != corev1.PodRunning {
		allReady = false
	}
	cond := func(t corev1.PodConditionType, ok bool, reason string) {
		s := corev1.ConditionFalse
		if ok {
			s, reason = corev1.ConditionTrue, ""
		}
		c := corev1.PodCondition{Type: t, Status: s, Reason: reason}
		for _, o := range old.Conditions {
			if o.Type == t {
				c.LastTransitionTime = o.LastTransitionTime
				c.ObservedGeneration = o.ObservedGeneration
				if o.Status != s {
					c.LastTransitionTime = now()
				}
			}
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now()
		}
		st.Conditions = append(st.Conditions, c)
	}
	cond(corev1.PodReadyToStartContainers, volumesOK, "")
	cond(corev1.PodInitialized, initsDone, "ContainersNotInitialized")
	cond(corev1.ContainersReady, allReady, "ContainersNotReady")
	cond(corev1.PodReady, allReady, "ContainersNotReady")
	for _, o := range old.Conditions {
		switch o.Type {
		case corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady:
		default:
			st.Conditions = append(st.Conditions, o) // PodScheduled and others we do not own
		}
	}
	if waitReason == "ImageNotMapped" {
		st.Reason, st.Message = waitReason, waitMessage
	}
	return st
}

// now is the current time at the API's precision (seconds), so that status comparisons
// with what the API server stored are exact.
func now() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }
