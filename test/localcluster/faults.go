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
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/conveyor-dev/conveyor/test/localcluster/kafkafault"
)

// Fault injection for chaos tests: crashes the way they happen on a real node.

// SetKafkaFaults makes the broker refuse the requests faults describe, in place of
// the faults set before (none: refuse nothing), and returns once the broker has them
// in force. The broker has no principals: a fault stands for an ACL that denies one
// client, told apart by the request versions it speaks (kafkafault.Fault.MaxVersion).
func (c *Cluster) SetKafkaFaults(ctx context.Context, faults ...kafkafault.Fault) error {
	k := c.kafka
	if k == nil {
		return errors.New("this cluster runs no Kafka (Options.NoKafka)")
	}
	k.faultsGen++
	gen := k.faultsGen
	b, err := json.Marshal(kafkafault.Faults{Generation: gen, Faults: faults})
	if err != nil {
		return err
	}
	tmp := k.faultsPath + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, k.faultsPath); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if a, err := os.ReadFile(kafkafault.AppliedPath(k.faultsPath)); err == nil && string(a) == strconv.FormatInt(gen, 10) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Kafka broker did not take the faults of %s within 10s (see %s)", k.faultsPath, k.logPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// KillPod sends SIGKILL to the processes of a pod's running containers, as a
// crash would; the kubelet then restarts them by the pod's restartPolicy (with
// its CrashLoopBackOff). It returns how many containers it killed.
func (c *Cluster) KillPod(ns, name string) (int, error) {
	pw, err := c.podWorker(ns, name)
	if err != nil {
		return 0, err
	}
	pw.mu.Lock()
	mains := append([]*container(nil), pw.mains...)
	pw.mu.Unlock()
	n := 0
	for _, ct := range mains {
		if pid := ct.pid(); pid > 0 {
			// Each container runs in a process group of its own.
			if err := syscall.Kill(-pid, syscall.SIGKILL); err == nil {
				n++
			}
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("pod %s/%s has no running container process", ns, name)
	}
	return n, nil
}

// podWorker is the kubelet's worker of a running pod.
func (c *Cluster) podWorker(ns, name string) (*podWorker, error) {
	if c.kubelet == nil {
		return nil, errors.New("this cluster runs no kubelet")
	}
	c.kubelet.mu.Lock()
	defer c.kubelet.mu.Unlock()
	for _, w := range c.kubelet.workers {
		if w.ns == ns && w.name == name {
			return w, nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s does not run on this cluster", ns, name)
}

// KillKafka sends SIGKILL to the broker process and starts it again on the
// same port and data folder (kfake's DataDir): what it had persisted survives.
func (c *Cluster) KillKafka(ctx context.Context) error {
	k := c.kafka
	if k == nil {
		return errors.New("this cluster runs no Kafka (Options.NoKafka)")
	}
	if k.proc != nil {
		k.proc.Kill()
	}
	return k.start(ctx)
}

// RestartAPIServer stops kube-apiserver and starts it again on the same
// address, certificates and etcd, as a control-plane upgrade or crash does.
func (c *Cluster) RestartAPIServer() error {
	if c.cp == nil {
		return errors.New("this cluster runs no control plane")
	}
	api := c.cp.cp.APIServer
	if err := api.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	if err := api.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}
