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

package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/conveyor-dev/conveyor/runtime/configprovider"
)

// The output relay. Go prints an unrecovered panic (in any goroutine) with
// its value as it is, straight to stderr, and the kubelet turns the last
// log lines into the pod's terminationMessage, which anyone who may get pods
// can read. So in a pod the worker runs as a child of a small relay
// (CONVEYOR_OUTPUT_RELAY=on, set by the operator): the child writes stdout
// and stderr into one pipe, and announces on that same pipe, before it
// uses it, every value its scrubber hides; the relay writes every line to
// its own stderr scrubbed, and when the child dies, the scrubbed tail to the
// termination log. Announcements travel in the output stream itself, so a
// value is always known before a line that holds it.
const (
	relayEnv      = "CONVEYOR_OUTPUT_RELAY"
	relayOn       = "on"
	relayChild    = "child"
	relayMarker   = "\x00conveyor-hide "
	relayTailSize = 4000 // bytes of the termination message (the kubelet keeps 4096)
)

// announceHidden writes one announcement of a hidden value to w (the
// child's stderr, one write, so it is not interleaved with other output).
func announceHidden(w io.Writer) func(value, label string) {
	var mu sync.Mutex
	return func(value, label string) {
		line := relayMarker + base64.StdEncoding.EncodeToString([]byte(value)) + " " + base64.StdEncoding.EncodeToString([]byte(label)) + "\n"
		mu.Lock()
		defer mu.Unlock()
		_, _ = io.WriteString(w, line)
	}
}

// runRelay starts the worker again as a child (same arguments), relays its
// output scrubbed to out, forwards SIGTERM and SIGINT, writes the scrubbed
// tail to termLog when the child fails, and returns the child's exit code.
func runRelay(args []string, out io.Writer, termLog string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(out, "conveyor-worker: output relay: %v\n", err)
		return 1
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), relayEnv+"="+relayChild)
	return relay(cmd, out, termLog)
}

func relay(cmd *exec.Cmd, out io.Writer, termLog string) int {
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(out, "conveyor-worker: output relay: %v\n", err)
		return 1
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	// The child dies with the relay (a SIGKILL of the pod's process kills
	// both); Pdeathsig follows the thread that started the child, so that
	// thread stays this goroutine's for good.
	runtime.LockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(out, "conveyor-worker: output relay: starting the worker: %v\n", err)
		return 1
	}
	pw.Close()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	tail := relayStream(pr, out)
	err = cmd.Wait()
	signal.Stop(sigs)
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case err != nil:
		code = 1
	}
	if code != 0 && termLog != "" {
		if f, err := os.OpenFile(termLog, os.O_WRONLY|os.O_TRUNC, 0); err == nil {
			_, _ = f.Write(tail)
			_ = f.Close()
		}
	}
	return code
}

// relayStream copies r to out line by line, learning announced values and
// scrubbing every line with them; it returns the last relayTailSize bytes
// it wrote.
func relayStream(r io.Reader, out io.Writer) []byte {
	hidden := configprovider.NewResolver(nil)
	br := bufio.NewReaderSize(r, 64<<10)
	var pending strings.Builder // output before an announcement, same line
	var tail []byte
	write := func(s string) {
		s = hidden.Scrub(s)
		_, _ = io.WriteString(out, s)
		tail = append(tail, s...)
		if len(tail) > 2*relayTailSize {
			tail = append([]byte(nil), tail[len(tail)-relayTailSize:]...)
		}
	}
	for {
		line, err := br.ReadString('\n')
		for {
			i := strings.Index(line, relayMarker)
			if i < 0 {
				break
			}
			pending.WriteString(line[:i])
			rest := line[i+len(relayMarker):]
			j := strings.IndexByte(rest, '\n')
			if j < 0 { // cut off at EOF
				line = ""
				break
			}
			if v, l, ok := strings.Cut(rest[:j], " "); ok {
				value, err1 := base64.StdEncoding.DecodeString(v)
				label, err2 := base64.StdEncoding.DecodeString(l)
				if err1 == nil && err2 == nil {
					hidden.Hide(string(value), string(label))
				}
			}
			line = rest[j+1:]
		}
		if line != "" {
			if pending.Len() > 0 {
				line = pending.String() + line
				pending.Reset()
			}
			if strings.HasSuffix(line, "\n") || err != nil {
				write(line)
			} else {
				pending.WriteString(line) // a line longer than the buffer: wait for its end
			}
		}
		if err != nil {
			if pending.Len() > 0 {
				write(pending.String())
			}
			break
		}
	}
	if len(tail) > relayTailSize {
		tail = tail[len(tail)-relayTailSize:]
	}
	return bytes.Clone(tail)
}
