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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/conveyor-dev/conveyor/test/testkit/proc"
)

// The network-namespace mode (Options.NetNS). The cluster creates a network namespace of
// its own (`unshare -n`), brings its loopback link up and puts 10.200.0.1/16 on it, so that
// every 10.200.x.y address is local inside it: pods get routable, non-loopback addresses
// (10.200.1.N), which EndpointSlices accept, and the API server can reach aggregated APIs
// (KEDA's metrics server) through Services. Every process of the cluster (etcd,
// kube-apiserver, kube-controller-manager, Kafka, the pods) runs inside it.
//
// The machine's own namespace sees nothing of it but forwarded ports: for each port the
// cluster serves on 127.0.0.1 inside the namespace (API server, etcd, Kafka), a forwarder
// listens on the same port of 127.0.0.1 outside, so kubeconfigs, kcat and clients work
// unchanged on both sides. Pod addresses are reached from this process through
// Cluster.DialContext (and Cluster.Forward for a shell).
const (
	netnsHostIP    = "10.200.0.1"
	netnsPrefixLen = 16
	netnsPodIPs    = "10.200.1."
)

// netNS is the cluster's network namespace, held open by a sleeping process.
type netNS struct {
	holder *proc.Process
	path   string   // /proc/<holder>/ns/net
	file   *os.File // an open handle on it, for setns
	logf   func(string, ...any)

	mu        sync.Mutex
	listeners []net.Listener
	dials     chan dialRequest // served by the one goroutine that lives in the namespace
	quit      chan struct{}    // closed by stop: that goroutine ends
	dialer    chan struct{}    // closed when it ended
	quitOnce  sync.Once
}

type dialRequest struct {
	ctx           context.Context
	network, addr string
	// listen: open a listener on addr inside the namespace instead of dialing.
	listen bool
	reply  chan dialResult
}

type dialResult struct {
	conn net.Conn
	ln   net.Listener
	err  error
}

// startNetNS creates the namespace and configures its loopback link.
func startNetNS(ctx context.Context, logf func(string, ...any)) (*netNS, error) {
	script := fmt.Sprintf("set -e; ip link set lo up; ip addr add %s/%d dev lo; echo ready; exec sleep infinity", netnsHostIP, netnsPrefixLen)
	cmd := exec.Command("unshare", "-n", "--", "/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("network namespace holder stdout: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	holder, err := proc.Start(cmd, nil)
	if err != nil {
		return nil, fmt.Errorf("starting `unshare -n` (the network namespace needs root and util-linux): %w", err)
	}
	n := &netNS{holder: holder, logf: logf}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && sc.Text() == "ready"
		ready <- ok
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case ok := <-ready:
		if !ok {
			<-holder.Done()
			return nil, fmt.Errorf("configuring the network namespace (ip link set lo up; ip addr add %s/%d dev lo): %s", netnsHostIP, netnsPrefixLen, strings.TrimSpace(stderr.String()))
		}
	case <-time.After(30 * time.Second):
		n.stop()
		return nil, errors.New("the network namespace holder did not get ready within 30s")
	case <-ctx.Done():
		n.stop()
		return nil, ctx.Err()
	}
	n.path = "/proc/" + strconv.Itoa(holder.Pid()) + "/ns/net"
	n.file, err = os.Open(n.path)
	if err != nil {
		n.stop()
		return nil, fmt.Errorf("opening %s: %w", n.path, err)
	}
	n.dials, n.quit, n.dialer = make(chan dialRequest), make(chan struct{}), make(chan struct{})
	entered := make(chan error, 1)
	go n.dialLoop(entered)
	if err := <-entered; err != nil {
		n.stop()
		return nil, err
	}
	logf("network namespace %s (holder pid %d), %s/%d on its loopback", n.path, holder.Pid(), netnsHostIP, netnsPrefixLen)
	return n, nil
}

// dialLoop moves its goroutine's OS thread into the namespace for good and dials there
// for DialContext, one connection at a time (every address it reaches is local, so a dial
// ends at once). The thread stays locked until stop: the Go runtime ends a thread whose
// locked goroutine returns, and a thread's end sends Pdeathsig to the processes it started
// (kube-controller-manager, the pods), so no other goroutine may lock a thread and return.
func (n *netNS) dialLoop(entered chan<- error) {
	defer close(n.dialer)
	runtime.LockOSThread()
	if err := unix.Setns(int(n.file.Fd()), unix.CLONE_NEWNET); err != nil {
		entered <- fmt.Errorf("entering the cluster's network namespace: %w", err)
		return
	}
	entered <- nil
	for {
		select {
		case <-n.quit:
			return
		case req := <-n.dials:
			if req.listen {
				ln, err := net.Listen(req.network, req.addr)
				req.reply <- dialResult{ln: ln, err: err}
				continue
			}
			ctx, cancel := context.WithTimeout(req.ctx, 5*time.Second)
			c, err := (&net.Dialer{}).DialContext(ctx, req.network, req.addr)
			cancel()
			req.reply <- dialResult{conn: c, err: err}
		}
	}
}

// wrap prefixes a command line so that it runs inside the namespace (nsenter execs the
// program, so the process id stays the one we started).
func (n *netNS) wrap(argv ...string) []string {
	if n == nil {
		return argv
	}
	return append([]string{"nsenter", "--net=" + n.path, "--"}, argv...)
}

// command is exec.Command run inside the namespace (or as is without one).
func (n *netNS) command(name string, args ...string) *exec.Cmd {
	argv := n.wrap(append([]string{name}, args...)...)
	return exec.Command(argv[0], argv[1:]...)
}

// DialContext dials from inside the namespace (through dialLoop). The socket belongs to
// the namespace for good, so the connection then works from any thread.
func (n *netNS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if n == nil {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	req := dialRequest{ctx: ctx, network: network, addr: addr, reply: make(chan dialResult, 1)}
	select {
	case n.dials <- req:
	case <-n.dialer:
		return nil, errors.New("the cluster's network namespace is gone (the cluster stopped)")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r := <-req.reply
	return r.conn, r.err
}

// listen opens a listener on 127.0.0.1:port (0: a free port) in the machine's namespace
// whose connections are forwarded to target inside the namespace ("" target: the same
// address). It returns the port.
func (n *netNS) listen(port int, target string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return 0, fmt.Errorf("listening on 127.0.0.1:%d for the forwarder into the cluster's network namespace: %w", port, err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	if target == "" {
		target = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	n.mu.Lock()
	n.listeners = append(n.listeners, l)
	n.mu.Unlock()
	go n.serve(l, target)
	return p, nil
}

// listenIn opens a listener inside the namespace on its host address (a free port) whose
// connections are forwarded to target in the machine's own namespace (a server the tests
// started there, such as PostgreSQL on 127.0.0.1), and returns the address pods dial.
func (n *netNS) listenIn(target string) (string, error) {
	req := dialRequest{ctx: context.Background(), network: "tcp", addr: net.JoinHostPort(netnsHostIP, "0"), listen: true, reply: make(chan dialResult, 1)}
	select {
	case n.dials <- req:
	case <-n.dialer:
		return "", errors.New("the cluster's network namespace is gone (the cluster stopped)")
	}
	r := <-req.reply
	if r.err != nil {
		return "", fmt.Errorf("listening inside the cluster's network namespace: %w", r.err)
	}
	n.mu.Lock()
	n.listeners = append(n.listeners, r.ln)
	n.mu.Unlock()
	go n.forward(r.ln, func(ctx context.Context) (net.Conn, error) { return (&net.Dialer{}).DialContext(ctx, "tcp", target) })
	return r.ln.Addr().String(), nil
}

func (n *netNS) serve(l net.Listener, target string) {
	n.forward(l, func(ctx context.Context) (net.Conn, error) { return n.DialContext(ctx, "tcp", target) })
}

// forward pipes every connection l accepts to a connection dial makes.
func (n *netNS) forward(l net.Listener, dial func(ctx context.Context) (net.Conn, error)) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			up, err := dial(ctx)
			cancel()
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(up, c)
			go pipe(c, up)
			<-done
			<-done
		}()
	}
}

// stop closes the forwarders and ends the holder; the namespace goes away with the last
// process in it.
func (n *netNS) stop() {
	if n == nil {
		return
	}
	n.mu.Lock()
	for _, l := range n.listeners {
		_ = l.Close()
	}
	n.listeners = nil
	n.mu.Unlock()
	n.holder.Kill()
	// Last, when every process of the cluster is gone: the dialing thread ends with it.
	if n.quit != nil {
		n.quitOnce.Do(func() { close(n.quit) })
		<-n.dialer
	}
	if n.file != nil {
		_ = n.file.Close()
	}
}

// wrapperScript writes dir/bin/<name>-in-netns, a script that execs bin inside the namespace
// with its arguments, for processes that others start (envtest's etcd and kube-apiserver).
func (n *netNS) wrapperScript(dir, bin string) (string, error) {
	p := filepath.Join(dir, "bin", filepath.Base(bin)+"-in-netns")
	script := "#!/bin/sh\nexec nsenter --net=" + n.path + " -- " + bin + " \"$@\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("writing %s: %w", p, err)
	}
	return p, nil
}
