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

package servers

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
)

// HostileRedis is a server a tenant could point a RedisSink at: it speaks
// just enough RESP for go-redis to connect (PING, HELLO refused, CLIENT
// SETINFO, SELECT, AUTH) and answers every other command, a write, with
// the header of a bulk string 2^62 bytes long, which go-redis allocates
// at once: makeslice panics on the goroutine that reads the answer.
type HostileRedis struct {
	// Addr is host:port on 127.0.0.1.
	Addr string
	ln   net.Listener
	mu   sync.Mutex
	n    int
}

// StartHostileRedis listens on a free loopback port.
func StartHostileRedis() (*HostileRedis, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &HostileRedis{Addr: ln.Addr().String(), ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go h.serve(c)
		}
	}()
	return h, nil
}

// Close stops listening.
func (h *HostileRedis) Close() error { return h.ln.Close() }

// Writes counts the commands answered with the oversized bulk string.
func (h *HostileRedis) Writes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *HostileRedis) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		args, err := readRESPCommand(r)
		if err != nil {
			return
		}
		var reply string
		switch strings.ToUpper(args[0]) {
		case "PING":
			reply = "+PONG\r\n"
		case "HELLO":
			reply = "-ERR unknown command 'HELLO'\r\n"
		case "CLIENT", "SELECT", "AUTH":
			reply = "+OK\r\n"
		default:
			h.mu.Lock()
			h.n++
			h.mu.Unlock()
			reply = "$" + strconv.FormatInt(1<<62, 10) + "\r\n"
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

// readRESPCommand reads one command: an array of bulk strings.
func readRESPCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 || n > 1<<20 {
		return nil, fmt.Errorf("not a RESP command: %q", line)
	}
	args := make([]string, 0, n)
	for range n {
		hdr, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(hdr, "$")))
		if err != nil || size < 0 || size > 64<<20 {
			return nil, fmt.Errorf("not a bulk string: %q", hdr)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args = append(args, string(b[:size]))
	}
	return args, nil
}
