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
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func probeTiming(p *corev1.Probe) (delay, period time.Duration, success, failure int32) {
	period, success, failure = 10*time.Second, 1, 3
	if p.PeriodSeconds > 0 {
		period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.SuccessThreshold > 0 {
		success = p.SuccessThreshold
	}
	if p.FailureThreshold > 0 {
		failure = p.FailureThreshold
	}
	return time.Duration(p.InitialDelaySeconds) * time.Second, period, success, failure
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (c *container) startupLoop(ctx context.Context, startedCh chan struct{}) {
	markStarted := func() {
		c.mu.Lock()
		c.started = true
		c.mu.Unlock()
		close(startedCh)
		c.pw.markDirty()
	}
	p := c.spec.StartupProbe
	if p == nil || c.init {
		markStarted()
		return
	}
	delay, period, _, failure := probeTiming(p)
	if !sleepCtx(ctx, delay) {
		return
	}
	fails := int32(0)
	for {
		ok, msg := c.probe(ctx, p)
		if ctx.Err() != nil {
			return
		}
		if ok {
			markStarted()
			return
		}
		if fails++; fails >= failure {
			c.requestKill("startup probe failed: " + msg)
			return
		}
		if !sleepCtx(ctx, period) {
			return
		}
	}
}

func (c *container) setReady(ready bool) {
	c.mu.Lock()
	changed := c.ready != ready
	c.ready = ready
	c.mu.Unlock()
	if changed {
		c.pw.markDirty()
	}
}

func (c *container) readinessLoop(ctx context.Context, startedCh chan struct{}) {
	select {
	case <-ctx.Done():
		return
	case <-startedCh:
	}
	p := c.spec.ReadinessProbe
	if c.init {
		return
	}
	if p == nil {
		c.setReady(true)
		return
	}
	delay, period, success, failure := probeTiming(p)
	if !sleepCtx(ctx, delay) {
		return
	}
	var oks, fails int32
	for {
		ok, _ := c.probe(ctx, p)
		if ctx.Err() != nil {
			return
		}
		if ok {
			oks, fails = oks+1, 0
			if oks >= success {
				c.setReady(true)
			}
		} else {
			oks, fails = 0, fails+1
			if fails >= failure {
				c.setReady(false)
			}
		}
		if !sleepCtx(ctx, period) {
			return
		}
	}
}

func (c *container) livenessLoop(ctx context.Context, startedCh chan struct{}) {
	p := c.spec.LivenessProbe
	if p == nil || c.init {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-startedCh:
	}
	delay, period, _, failure := probeTiming(p)
	if !sleepCtx(ctx, delay) {
		return
	}
	fails := int32(0)
	for {
		ok, msg := c.probe(ctx, p)
		if ctx.Err() != nil {
			return
		}
		if ok {
			fails = 0
		} else if fails++; fails >= failure {
			c.requestKill("liveness probe failed: " + msg)
			return
		}
		if !sleepCtx(ctx, period) {
			return
		}
	}
}

// probe runs one check: httpGet and tcpSocket against the pod's address, exec inside the
// container's mount namespace (nsenter). gRPC probes are not supported and always fail.
func (c *container) probe(ctx context.Context, p *corev1.Probe) (bool, string) {
	timeout := time.Second
	if p.TimeoutSeconds > 0 {
		timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c.pw.mu.Lock()
	podIP := c.pw.ip
	c.pw.mu.Unlock()
	switch {
	case p.HTTPGet != nil:
		host := p.HTTPGet.Host
		if host == "" {
			host = podIP
		}
		port, err := c.resolvePort(p.HTTPGet.Port)
		if err != nil {
			return false, err.Error()
		}
		scheme := strings.ToLower(string(p.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		path := p.HTTPGet.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path), nil)
		if err != nil {
			return false, err.Error()
		}
		req.Header.Set("User-Agent", "kube-probe/1.37")
		for _, h := range p.HTTPGet.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true, DialContext: c.pw.k.netns.DialContext}, // probes do not verify, like the kubelet's
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return true, ""
	case p.TCPSocket != nil:
		host := p.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		port, err := c.resolvePort(p.TCPSocket.Port)
		if err != nil {
			return false, err.Error()
		}
		conn, err := c.pw.k.netns.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false, err.Error()
		}
		_ = conn.Close()
		return true, ""
	case p.Exec != nil && len(p.Exec.Command) > 0:
		pid := c.pid()
		c.mu.Lock()
		env := c.env
		c.mu.Unlock()
		folder, _, _ := c.pw.k.imageFolder(c.spec.Image)
		bin, err := resolveBinary(folder, p.Exec.Command[0])
		if err != nil {
			return false, err.Error()
		}
		args := append([]string{"-t", strconv.Itoa(pid), "-m", "-n", "--"}, c.userPrefix()...)
		args = append(append(args, bin), p.Exec.Command[1:]...)
		cmd := exec.CommandContext(ctx, "nsenter", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return false, fmt.Sprintf("exec probe: %v: %s", err, strings.TrimSpace(string(out)))
		}
		return true, ""
	case p.GRPC != nil:
		return false, "gRPC probes are not supported by the local cluster's process kubelet"
	}
	return false, "probe has no handler"
}

func (c *container) resolvePort(port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range c.spec.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("probe port %q names no port of container %q", port.StrVal, c.spec.Name)
}
