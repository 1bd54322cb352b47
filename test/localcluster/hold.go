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
	"sync"
)

// KillPodAndHold SIGKILLs the processes of a pod's running containers, as KillPod
// does, and keeps the kubelet from starting them again until release is called:
// a process that crashed and stays down while its pod stays in the API server, not
// Ready (on a real node: a container that cannot start again, or a node cut off
// before the node controller evicts its pods). Deleting the pod ends the hold too.
// release may be called more than once.
func (c *Cluster) KillPodAndHold(ns, name string) (release func(), err error) {
	pw, err := c.podWorker(ns, name)
	if err != nil {
		return nil, err
	}
	hold := make(chan struct{})
	pw.mu.Lock()
	if pw.restartHold != nil {
		pw.mu.Unlock()
		return nil, fmt.Errorf("pod %s/%s is held already", ns, name)
	}
	pw.restartHold = hold
	pw.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			pw.mu.Lock()
			pw.restartHold = nil
			pw.mu.Unlock()
			close(hold)
			pw.logf("restart hold released")
		})
	}
	if _, err := c.KillPod(ns, name); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// waitRestartHold returns once no hold keeps the pod's crashed containers from
// starting again, or the pod stops.
func (pw *podWorker) waitRestartHold(ctx context.Context) {
	pw.mu.Lock()
	hold := pw.restartHold
	pw.mu.Unlock()
	if hold == nil {
		return
	}
	pw.logf("restart held (KillPodAndHold)")
	select {
	case <-hold:
	case <-pw.stopCh:
	case <-ctx.Done():
	}
}
